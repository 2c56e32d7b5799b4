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
      limits: { memoryMb: 512, maxProcs: 256, maxFileMb: 1024 },
      network: 'none',
    });
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

  it.each([
    [{ CODEXEC_MAX_TIMEOUT_MS: 'soon' }, /^CODEXEC_MAX_TIMEOUT_MS: /],
    [{ CODEXEC_SANDBOX_MODE: 'chroot' }, /^CODEXEC_SANDBOX_MODE: /],
    [
      { CODEXEC_DEFAULT_TIMEOUT_MS: '9000', CODEXEC_MAX_TIMEOUT_MS: '1000' },
      /^CODEXEC_DEFAULT_TIMEOUT_MS: must not exceed/,
    ],
    [{ CODEXEC_MAX_OUTPUT_CHARS: '1000' }, /^CODEXEC_TRUNCATION_HEAD: HEAD \+ TAIL/],
  ])('rejects %o with NAME: reason', (env, message) => {
    home = tempDir();
    expect(() => loadConfig({ CODEXEC_HOME: home, ...env })).toThrow(message);
  });

  it('rejects a config file with an unknown setting or bad JSON', () => {
    home = tempDir();
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.json'), '{"CODEXEC_TYPO": 1}');
    expect(() => loadConfig({ CODEXEC_HOME: home })).toThrow(/unknown setting CODEXEC_TYPO/);
    writeFileSync(join(home, 'config.json'), '{not json');
    expect(() => loadConfig({ CODEXEC_HOME: home })).toThrow(/not valid JSON/);
  });
});
