// Operator mounts (CODEXEC_MOUNTS) in the confining mode under test (namespace, or landlock in its
// pass), and the files that stop a server's start: each names the setting, the entry and why.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT, SANDBOX_ENV, SANDBOX_MODE } from '../helpers/mode.js';
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
    [
      'a NUL in a target',
      [{ source: 'DATA', target: '/data\u0000--bind\u0000/\u0000/rw', principals: ['*'] }],
      /0\.target: a path with a control character/,
    ],
    [
      'a source in /proc',
      [{ source: '/proc/self/root', target: '/data', principals: ['*'] }],
      /0\.source: \/proc\/self\/root is in \/proc/,
    ],
    [
      '65 mounts',
      Array.from({ length: 65 }, (_, at) => ({ source: 'DATA', target: `/d${at}`, principals: ['*'] })),
      /65 mounts, more than 64/,
    ],
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
    // A user's directory beneath an allowed root (a working_dir's), and one inside it.
    const users = ownedDir('codexec-mount-root-');
    const inside = join(users, 'data');
    mkdirSync(inside);
    for (const source of [users, inside]) {
      const inRoots = start([{ source, target: '/data', principals: ['*'] }], {
        CODEXEC_ALLOWED_PATHS: join(users, '..'),
      });
      expect(inRoots.status).toBe(2);
      expect(inRoots.stderr).toMatch(
        /0\.source: .* a user's directory where code may work \(CODEXEC_ALLOWED_PATHS\)/,
      );
    }
    // A source that holds an allowed root's user directory, the same.
    const around = start([{ source: join(users, '..'), target: '/data', principals: ['*'] }], {
      CODEXEC_ALLOWED_PATHS: users,
    });
    expect(around.stderr).toMatch(
      /0\.source: .*(a user's directory where code may work|codexec's own state)/,
    );
    const overHome = start([{ source: 'DATA', target: join(home, 'sandbox'), principals: ['*'] }], {
      CODEXEC_HOME: home,
    });
    // (Beneath /tmp, the sandbox's own /tmp is named first.)
    expect(overHome.stderr).toMatch(
      /0\.target: .* would cover .*(, where runs work|which every sandbox has)/,
    );
    const subprocess = start([{ source: 'DATA', target: '/data', principals: ['*'] }], {
      CODEXEC_SANDBOX_MODE: 'subprocess',
    });
    expect(subprocess.status).toBe(2);
    expect(subprocess.stderr).toMatch(/subprocess mode confines nothing/);
  });

  it.runIf(IS_ROOT)(
    'refuses, in docker mode, a source with a mount beneath it (an engine lends that writable)',
    () => {
      const source = tempDir('codexec-mount-sub-');
      mkdirSync(join(source, 'sub'));
      execFileSync('mount', ['-t', 'tmpfs', 'none', join(source, 'sub')]);
      try {
        const docker = start([{ source, target: '/data', principals: ['*'] }], {
          CODEXEC_SANDBOX_MODE: 'docker',
        });
        expect(docker.status).toBe(2);
        expect(docker.stderr).toMatch(/0\.source: .* has .*\/sub mounted beneath it/);
        const colon = start([{ source: 'DATA', target: '/data:rw', principals: ['*'] }], {
          CODEXEC_SANDBOX_MODE: 'docker',
        });
        expect(colon.stderr).toMatch(
          /0\.target: \/data:rw: a container engine cannot bind a path with : or ,/,
        );
      } finally {
        execFileSync('umount', [join(source, 'sub')]);
      }
    },
  );

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
