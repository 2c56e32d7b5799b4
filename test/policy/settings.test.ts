import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, RUNTIME_NAMES } from '../../src/config/index.js';
import { LANGUAGES } from '../../src/runtimes/index.js';

const home = mkdtempSync(join(tmpdir(), 'codexec-gate-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const load = (env: Record<string, string>) => loadConfig({ CODEXEC_HOME: home, ...env });

describe('gate settings', () => {
  it("the settings' runtime names are the runtimes' languages", () => {
    expect([...RUNTIME_NAMES]).toEqual([...LANGUAGES]);
  });

  it('defaults: enabled, auto, 120000 ms, every runtime', () => {
    expect(load({}).gate).toEqual({
      enabled: true,
      approval: 'auto',
      approvalTimeoutMs: 120_000,
      approver: 'client',
      maxPendingApprovals: 16,
      maxPendingApprovalsPerPrincipal: 4,
      allowedRuntimes: ['python', 'node', 'typescript', 'bash'],
    });
  });

  it("a principal's share of pending approvals: a quarter of the bound by default, never above it", () => {
    expect(load({ CODEXEC_MAX_PENDING_APPROVALS: '10' }).gate.maxPendingApprovalsPerPrincipal).toBe(3);
    expect(load({ CODEXEC_MAX_PENDING_APPROVALS: '1' }).gate.maxPendingApprovalsPerPrincipal).toBe(1);
    const set = { CODEXEC_MAX_PENDING_APPROVALS: '8', CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL: '12' };
    expect(load(set).gate.maxPendingApprovalsPerPrincipal).toBe(8);
    expect(() => load({ CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL: '0' })).toThrow(
      /CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL/,
    );
  });

  it('parses CODEXEC_ENABLED=false (not as a truthy string) and a runtime list', () => {
    const { gate } = load({
      CODEXEC_ENABLED: 'false',
      CODEXEC_APPROVAL: 'risky',
      CODEXEC_ALLOWED_RUNTIMES: ' python, bash ,python',
    });
    expect(gate).toMatchObject({ enabled: false, approval: 'risky', allowedRuntimes: ['python', 'bash'] });
  });

  it.each([
    [{ CODEXEC_ENABLED: 'no' }, /^CODEXEC_ENABLED: /],
    [{ CODEXEC_APPROVAL: 'sometimes' }, /^CODEXEC_APPROVAL: /],
    [{ CODEXEC_APPROVAL_TIMEOUT_MS: '5' }, /^CODEXEC_APPROVAL_TIMEOUT_MS: /],
    [{ CODEXEC_ALLOWED_RUNTIMES: 'python,ruby' }, /^CODEXEC_ALLOWED_RUNTIMES: each runtime must be one of/],
    [{ CODEXEC_ALLOWED_RUNTIMES: ' , ' }, /^CODEXEC_ALLOWED_RUNTIMES: name at least one/],
  ])('%o stops start-up naming the setting', (env, message) => {
    expect(() => load(env)).toThrow(message);
  });
});
