import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { tempDir } from '../helpers/server.js';

describe('loadConfig', () => {
  let home = '';
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('applies the seed defaults beneath CODEXEC_HOME', () => {
    home = tempDir();
    const config = loadConfig({ CODEXEC_HOME: home });
    expect(config).toMatchObject({
      home,
      sandboxMode: 'auto',
      sandboxDir: join(home, 'sandbox'),
      logDir: join(home, 'logs'),
      scriptsDir: join(home, 'scripts'),
      defaultTimeoutMs: 30_000,
      maxTimeoutMs: 300_000,
      sessionIdleTimeoutMs: 900_000,
      output: { maxChars: 10_000, head: 4000, tail: 4000 },
      retentionDays: { success: 30, failure: 90, session: 90 },
      maxSessions: 5,
      maxSessionsTotal: 20,
      runs: { maxConcurrent: 8, maxQueued: 64, queueTimeoutMs: 30_000 },
      limits: { memoryMb: 512, maxProcs: 256, maxFileMb: 1024 },
      network: 'none',
    });
    expect(config.gate.maxPendingApprovals).toBe(16);
  });

  it('derives the server-wide session cap from the per-principal one unless it is set', () => {
    home = tempDir();
    expect(loadConfig({ CODEXEC_HOME: home, CODEXEC_MAX_SESSIONS: '3' }).maxSessionsTotal).toBe(12);
    const set = loadConfig({
      CODEXEC_HOME: home,
      CODEXEC_MAX_SESSIONS: '3',
      CODEXEC_MAX_SESSIONS_TOTAL: '4',
    });
    expect(set.maxSessionsTotal).toBe(4);
  });

  it('expands ~ and lets env override the config file, which overrides defaults', () => {
    home = tempDir();
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ CODEXEC_MAX_SESSIONS: 3, CODEXEC_MEMORY_MB: 256 }),
    );
    const config = loadConfig({
      CODEXEC_HOME: home,
      CODEXEC_MEMORY_MB: '1024',
      CODEXEC_LOG_DIR: '~/somewhere',
    });
    expect(config.maxSessions).toBe(3);
    expect(config.limits.memoryMb).toBe(1024);
    expect(config.logDir).toBe(join(homedir(), 'somewhere'));
  });

  it('takes CODEXEC_DOCKER_RUNTIME from env over config.json, absent by default', () => {
    home = tempDir();
    expect(loadConfig({ CODEXEC_HOME: home }).docker.runtime).toBeUndefined();
    writeFileSync(join(home, 'config.json'), JSON.stringify({ CODEXEC_DOCKER_RUNTIME: 'runsc' }));
    expect(loadConfig({ CODEXEC_HOME: home }).docker.runtime).toBe('runsc');
    expect(loadConfig({ CODEXEC_HOME: home, CODEXEC_DOCKER_RUNTIME: '/usr/bin/runsc' }).docker.runtime).toBe(
      '/usr/bin/runsc',
    );
  });

  it.each([
    [{ CODEXEC_DOCKER_RUNTIME: 'runsc --debug' }, /^CODEXEC_DOCKER_RUNTIME: /],
    [{ CODEXEC_MAX_TIMEOUT_MS: 'soon' }, /^CODEXEC_MAX_TIMEOUT_MS: /],
    [{ CODEXEC_SANDBOX_MODE: 'chroot' }, /^CODEXEC_SANDBOX_MODE: /],
    [
      { CODEXEC_DEFAULT_TIMEOUT_MS: '9000', CODEXEC_MAX_TIMEOUT_MS: '1000' },
      /^CODEXEC_DEFAULT_TIMEOUT_MS: must not exceed/,
    ],
    [
      { CODEXEC_MAX_OUTPUT_CHARS: '1000', CODEXEC_TRUNCATION_HEAD: '600', CODEXEC_TRUNCATION_TAIL: '600' },
      /^CODEXEC_TRUNCATION_HEAD: HEAD \+ TAIL must not exceed CODEXEC_MAX_OUTPUT_CHARS \(1000\)/,
    ],
    [
      { CODEXEC_MAX_OUTPUT_CHARS: '1000', CODEXEC_TRUNCATION_TAIL: '1200' },
      /^CODEXEC_TRUNCATION_TAIL: must not exceed CODEXEC_MAX_OUTPUT_CHARS \(1000\)/,
    ],
  ])('rejects %o with NAME: reason', (env, message) => {
    home = tempDir();
    expect(() => loadConfig({ CODEXEC_HOME: home, ...env })).toThrow(message);
  });

  it('parses every boolean setting one way: true/false or 1/0 in env, a JSON boolean in config.json', () => {
    home = tempDir();
    const flags = (env: Record<string, string>) => {
      const config = loadConfig({ CODEXEC_HOME: home, ...env });
      return [config.secrets.redact, config.gate.enabled, config.http.metricsPublic];
    };
    expect(flags({})).toEqual([true, true, false]);
    const off = { CODEXEC_REDACT_SECRETS: '0', CODEXEC_ENABLED: 'false', CODEXEC_METRICS_PUBLIC: '1' };
    expect(flags(off)).toEqual([false, false, true]);
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ CODEXEC_REDACT_SECRETS: false, CODEXEC_ENABLED: true, CODEXEC_METRICS_PUBLIC: true }),
    );
    expect(flags({})).toEqual([false, true, true]);
    for (const name of ['CODEXEC_REDACT_SECRETS', 'CODEXEC_ENABLED', 'CODEXEC_METRICS_PUBLIC'])
      expect(() => loadConfig({ CODEXEC_HOME: home, [name]: 'yes' })).toThrow(new RegExp(`^${name}: `));
  });

  it('rejects a config file with an unknown setting or bad JSON', () => {
    home = tempDir();
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.json'), '{"CODEXEC_TYPO": 1}');
    expect(() => loadConfig({ CODEXEC_HOME: home })).toThrow(/unknown setting CODEXEC_TYPO/);
    writeFileSync(join(home, 'config.json'), '{not json');
    expect(() => loadConfig({ CODEXEC_HOME: home })).toThrow(/not valid JSON/);
  });

  describe('settings that constrain each other', () => {
    const load = (env: Record<string, string>, file?: Record<string, unknown>) => {
      home = tempDir();
      if (file) writeFileSync(join(home, 'config.json'), JSON.stringify(file));
      const warnings: string[] = [];
      const config = loadConfig({ CODEXEC_HOME: home, ...env }, (line) => warnings.push(line));
      return { config, warnings };
    };

    it('warns about nothing when every value is a default', () => {
      expect(load({}).warnings).toEqual([]);
    });

    it('warns that an approver is asked nothing while approval is auto', () => {
      expect(load({ CODEXEC_APPROVER: 'dashboard' }).warnings).toEqual([
        'CODEXEC_APPROVER=dashboard is asked nothing: CODEXEC_APPROVAL is auto, which never asks (set it to ask or risky)',
      ]);
      expect(load({ CODEXEC_APPROVER: 'both', CODEXEC_APPROVAL: 'risky' }).warnings).toEqual([]);
    });

    it('lowers the default timeout to a max timeout set alone, with one warning', () => {
      const { config, warnings } = load({ CODEXEC_MAX_TIMEOUT_MS: '2000' });
      expect(config).toMatchObject({ defaultTimeoutMs: 2000, maxTimeoutMs: 2000 });
      expect(warnings).toEqual([
        'CODEXEC_DEFAULT_TIMEOUT_MS lowered from its default 30000 to 2000 to fit CODEXEC_MAX_TIMEOUT_MS=2000',
      ]);
    });

    it('raises the default max timeout to a default timeout set alone', () => {
      const { config, warnings } = load({}, { CODEXEC_DEFAULT_TIMEOUT_MS: 600_000 });
      expect(config).toMatchObject({ defaultTimeoutMs: 600_000, maxTimeoutMs: 600_000 });
      expect(warnings).toEqual([
        'CODEXEC_MAX_TIMEOUT_MS raised from its default 300000 to 600000 to fit CODEXEC_DEFAULT_TIMEOUT_MS=600000',
      ]);
    });

    it('counts config.json values as set: one there and one in env that conflict stop start-up', () => {
      expect(() => load({ CODEXEC_MAX_TIMEOUT_MS: '2000' }, { CODEXEC_DEFAULT_TIMEOUT_MS: 9000 })).toThrow(
        /^CODEXEC_DEFAULT_TIMEOUT_MS: must not exceed CODEXEC_MAX_TIMEOUT_MS \(2000\)$/,
      );
    });

    it('keeps the HTTP head time within the whole request time (Node refuses otherwise)', () => {
      const raised = load({ CODEXEC_HTTP_HEADERS_TIMEOUT_MS: '90000' });
      expect(raised.config.http).toMatchObject({ headersTimeoutMs: 90_000, requestTimeoutMs: 90_000 });
      expect(raised.warnings).toEqual([
        'CODEXEC_HTTP_REQUEST_TIMEOUT_MS raised from its default 60000 to 90000 to fit CODEXEC_HTTP_HEADERS_TIMEOUT_MS=90000',
      ]);
      const lowered = load({ CODEXEC_HTTP_REQUEST_TIMEOUT_MS: '5000' });
      expect(lowered.config.http).toMatchObject({ headersTimeoutMs: 5000, requestTimeoutMs: 5000 });
      expect(() =>
        load({ CODEXEC_HTTP_HEADERS_TIMEOUT_MS: '9000', CODEXEC_HTTP_REQUEST_TIMEOUT_MS: '5000' }),
      ).toThrow(
        /^CODEXEC_HTTP_HEADERS_TIMEOUT_MS: must not exceed CODEXEC_HTTP_REQUEST_TIMEOUT_MS \(5000\)$/,
      );
      expect(load({}).config.http).toMatchObject({
        maxConnections: 256,
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 60_000,
        keepAliveTimeoutMs: 5_000,
      });
    });

    it('shrinks the default head and tail in proportion to fit a max output set alone', () => {
      const { config, warnings } = load({ CODEXEC_MAX_OUTPUT_CHARS: '1000' });
      expect(config.output).toEqual({ maxChars: 1000, head: 500, tail: 500 });
      expect(warnings).toEqual([
        'CODEXEC_TRUNCATION_HEAD from 4000 to 500 and CODEXEC_TRUNCATION_TAIL from 4000 to 500 (defaults) lowered to fit CODEXEC_MAX_OUTPUT_CHARS=1000',
      ]);
    });

    it('gives the default tail what a set head leaves of a set max output', () => {
      const { config, warnings } = load({ CODEXEC_MAX_OUTPUT_CHARS: '1000', CODEXEC_TRUNCATION_HEAD: '800' });
      expect(config.output).toEqual({ maxChars: 1000, head: 800, tail: 200 });
      expect(warnings).toHaveLength(1);
    });

    it('raises the default max output to fit a head set alone', () => {
      const { config, warnings } = load({ CODEXEC_TRUNCATION_HEAD: '9000' });
      expect(config.output).toEqual({ maxChars: 13_000, head: 9000, tail: 4000 });
      expect(warnings).toEqual([
        'CODEXEC_MAX_OUTPUT_CHARS raised from its default 10000 to 13000 to fit CODEXEC_TRUNCATION_HEAD + CODEXEC_TRUNCATION_TAIL (9000 + 4000)',
      ]);
    });

    it('leaves set values alone when they already fit', () => {
      const { config, warnings } = load({
        CODEXEC_MAX_TIMEOUT_MS: '60000',
        CODEXEC_MAX_OUTPUT_CHARS: '9000',
      });
      expect(config).toMatchObject({ defaultTimeoutMs: 30_000, maxTimeoutMs: 60_000 });
      expect(config.output).toEqual({ maxChars: 9000, head: 4000, tail: 4000 });
      expect(warnings).toEqual([]);
    });

    it('keeps quiet with LOG_LEVEL=error but still clamps', () => {
      const { config, warnings } = load({ CODEXEC_MAX_TIMEOUT_MS: '2000', LOG_LEVEL: 'error' });
      expect(config.defaultTimeoutMs).toBe(2000);
      expect(warnings).toEqual([]);
    });
  });
});

describe('CODEXEC_NETWORK=allowlist settings', () => {
  const home = tempDir();
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('parses both lists, stops start-up on a malformed entry naming it, and refuses subprocess mode', () => {
    const config = loadConfig({
      CODEXEC_HOME: home,
      CODEXEC_NETWORK: 'allowlist',
      CODEXEC_ALLOWED_DOMAINS: 'registry.npmjs.org, *.example.com:8443',
      CODEXEC_DENIED_DOMAINS: 'evil.example.com',
    });
    expect(config.egress.allowed.map((rule) => rule.text)).toEqual([
      'registry.npmjs.org',
      '*.example.com:8443',
    ]);
    expect(config.egress.denied.map((rule) => rule.text)).toEqual(['evil.example.com']);
    expect(() =>
      loadConfig({
        CODEXEC_HOME: home,
        CODEXEC_NETWORK: 'allowlist',
        CODEXEC_ALLOWED_DOMAINS: 'ok.example, *.com',
      }),
    ).toThrow(/^CODEXEC_ALLOWED_DOMAINS: "\*\.com" is a wildcard of a top-level domain/);
    expect(() =>
      loadConfig({ CODEXEC_HOME: home, CODEXEC_NETWORK: 'allowlist', CODEXEC_SANDBOX_MODE: 'subprocess' }),
    ).toThrow(/CODEXEC_NETWORK: allowlist needs a sandbox/);
    const warnings: string[] = [];
    loadConfig({ CODEXEC_HOME: home, CODEXEC_DENIED_DOMAINS: 'x.example' }, (warning) =>
      warnings.push(warning),
    );
    expect(warnings).toEqual([expect.stringContaining('CODEXEC_DENIED_DOMAINS is ignored')]);
  });
});
