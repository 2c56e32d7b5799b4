// Operator mounts (CODEXEC_MOUNTS) in the confining mode under test (namespace, or landlock in its
// pass), and the files that stop a server's start: each names the setting, the entry and why.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_ENV, SANDBOX_MODE } from '../helpers/mode.js';
import { mountSuite } from '../helpers/mounts.js';
import { baseEnv, CLI, serverCwd, tempDir } from '../helpers/server.js';

describe(`operator mounts in ${SANDBOX_MODE} mode`, () => {
  mountSuite(SANDBOX_ENV, { moves: SANDBOX_MODE !== 'landlock', held: true });
});

describe('CODEXEC_MOUNTS files that stop the start', () => {
  /** `codexec serve` with `entries` as the mounts file: its exit code and stderr. */
  function start(entries: unknown, env: Record<string, string> = {}) {
    const home = tempDir();
    const data = tempDir('codexec-mount-data-');
    const file = join(tempDir(), 'mounts.json');
    writeFileSync(
      file,
      typeof entries === 'string' ? entries : JSON.stringify(entries).replaceAll('DATA', data),
    );
    const result = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...baseEnv(home), CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_MOUNTS: file, ...env },
      cwd: serverCwd(home),
      input: '',
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { status: result.status, stderr: result.stderr, home };
  }

  it.each([
    ['not JSON', '[', /CODEXEC_MOUNTS: .*mounts\.json: not valid JSON/],
    [
      'an unknown field',
      [{ source: 'DATA', principals: ['*'], writable: true }],
      /0: unknown field writable/,
    ],
    ['no principal', [{ source: 'DATA', principals: [] }], /0\.principals: name at least one principal/],
    [
      'a relative source',
      [{ source: 'data', principals: ['*'] }],
      /0\.source: source must be an absolute path/,
    ],
    [
      'a target over the system',
      [{ source: 'DATA', target: '/usr/share/x', principals: ['*'] }],
      /0\.target: \/usr\/share\/x would cover \/usr/,
    ],
    [
      'a target that covers the sandbox’s /tmp',
      [{ source: 'DATA', target: '/', principals: ['*'] }],
      /0\.target: \/ cannot be mounted/,
    ],
    [
      'no such source',
      [{ source: '/nonexistent/dir', target: '/data', principals: ['*'] }],
      /0\.source: cannot open \/nonexistent\/dir \(no such directory\)/,
    ],
    [
      'two targets one principal gets',
      [
        { source: 'DATA', target: '/data', principals: ['alice'] },
        { source: 'DATA', target: '/data/inner', principals: ['*'] },
      ],
      /1\.target: \/data\/inner overlaps mount 0's target \/data/,
    ],
  ])('refuses %s', (_what, entries, message) => {
    const { status, stderr } = start(entries);
    expect(status).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('refuses a source that holds codexec’s home or lies where code writes, and subprocess mode', () => {
    const holds = start([{ source: '/', target: '/data', principals: ['*'] }]);
    expect(holds.stderr).toMatch(/0\.source: \/ cannot be mounted/);
    const home = tempDir();
    const inHome = start([{ source: home, target: '/data', principals: ['*'] }], { CODEXEC_HOME: home });
    expect(inHome.status).toBe(2);
    expect(inHome.stderr).toMatch(/0\.source: .* holds codexec's own state/);
    const roots = tempDir();
    const inRoots = start([{ source: roots, target: '/data', principals: ['*'] }], {
      CODEXEC_ALLOWED_PATHS: join(roots, '..'),
    });
    expect(inRoots.status).toBe(2);
    expect(inRoots.stderr).toMatch(/0\.source: .* where code may write \(CODEXEC_ALLOWED_PATHS\)/);
    const subprocess = start([{ source: 'DATA', target: '/data', principals: ['*'] }], {
      CODEXEC_SANDBOX_MODE: 'subprocess',
    });
    expect(subprocess.status).toBe(2);
    expect(subprocess.stderr).toMatch(/subprocess mode confines nothing/);
  });

  it('lets principals that share none have targets that meet, and in landlock mode wants a target its source', () => {
    const apart = start([
      { source: 'DATA', target: '/data', principals: ['alice'] },
      { source: 'DATA', target: '/data', principals: ['bob'] },
    ]);
    expect(apart.stderr).not.toMatch(/CODEXEC_MOUNTS/);
    const landlock = start([{ source: 'DATA', target: '/data', principals: ['*'] }], {
      CODEXEC_SANDBOX_MODE: 'landlock',
    });
    expect(landlock.status).toBe(2);
    expect(landlock.stderr).toMatch(/landlock mode has no mount namespace/);
  });
});
