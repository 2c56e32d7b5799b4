// `codexec doctor`'s sandbox lines: what auto will pick, whether namespaces can be
// made and if not why (cause and fix), and Landlock's ABI with the rules each ABI adds. The real
// thing on this machine, and as root without CAP_SYS_ADMIN. Denied user namespaces and seccomp
// filters are in test/sandbox/auto.test.ts, with the server they stop.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LANDLOCK_ABI_RULES } from '../../src/cli/doctor-sandbox.js';
import { landlockAbi } from '../../src/sandbox/landlock/index.js';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const home = tempDir('codexec-doctor-');
chmodSync(home, 0o777);
afterAll(() => rmSync(home, { recursive: true, force: true }));
const root = process.getuid?.() === 0;

function doctor(prefix: string[] = []): string {
  const env = { ...baseEnv(join(home, `state-${prefix.length}`)), HOME: home };
  const [command = process.execPath, ...args] = [...prefix, process.execPath, CLI, 'doctor'];
  const result = spawnSync(command, args, { env, encoding: 'utf8', timeout: 60_000 });
  expect(result.status).toBe(0);
  return result.stdout;
}

describe('doctor on this machine (namespaces work here)', () => {
  let stdout: string;
  beforeAll(() => {
    stdout = doctor();
  });

  it('says auto will pick namespace, and that the namespaces bubblewrap needs can be made', () => {
    expect(stdout).toMatch(/^ {2}auto will pick: +namespace \(a probe sandbox started\)$/m);
    const attempt = root ? 'unshare --mount --net true' : 'unshare --user --map-root-user --mount true';
    expect(stdout).toMatch(new RegExp(`^ {2}OK +namespaces +${attempt} works`, 'm'));
    expect(stdout).not.toMatch(/^ {2}cause /m);
    expect(stdout).not.toContain('user namespaces     '); // the old line, replaced
  });

  it.runIf(root)(
    'says whether the native parts a root server forks runs with were built (CI builds them)',
    () => {
      expect(stdout).toMatch(/^ {2}OK +node forks +built by npm run build: warm node runs are forked$/m);
      expect(stdout).toMatch(
        /^ {2}OK +nest +built by npm run build: zygote runs' sandboxes come from a template$/m,
      );
    },
  );

  it("gives Landlock's ABI and, for each ABI from 1 to 7, the rules it adds and whether this kernel has them", () => {
    const abi = landlockAbi();
    expect(stdout).toMatch(new RegExp(`^ {2}${abi > 0 ? 'OK' : 'missing'} +Landlock ABI +${abi}`, 'm'));
    const rows = stdout.split('\n').filter((line) => /^ {11}ABI \d /.test(line));
    expect(rows).toEqual(
      LANDLOCK_ABI_RULES.map(
        (rule, i) => `           ABI ${i + 1} ${(i < abi ? 'yes' : 'no').padEnd(4)} ${rule}`,
      ),
    );
    expect(rows[0]).toContain('filesystem');
    expect(rows[1]).toContain('REFER');
    expect(rows[2]).toContain('TRUNCATE');
    expect(rows[3]).toContain('TCP: bind and connect');
    expect(rows[4]).toContain('IOCTL_DEV');
    expect(rows[5]).toContain('scoped signals and abstract unix sockets');
    expect(rows[6]).toContain('audit');
  });

  it.runIf(root)('run by an ordinary user (uid 65534): a user namespace it maps itself into', () => {
    const out = doctor(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']);
    expect(out).toMatch(/^ {2}OK +namespaces +unshare --user --map-root-user --mount true works$/m);
    expect(out).toMatch(/^ {2}auto will pick: +namespace/m);
  });
});

describe.runIf(root)('doctor as root without CAP_SYS_ADMIN', () => {
  it('names the missing capability (and the container, where there is one) and the fix', () => {
    const stdout = doctor(['setpriv', '--inh-caps=-sys_admin', '--bounding-set=-sys_admin']);
    const container = existsSync('/.dockerenv') || existsSync('/run/.containerenv');
    expect(stdout).toMatch(
      /^ {2}missing +namespaces +unshare --mount --net true fails: .*Operation not permitted/m,
    );
    expect(stdout).toMatch(
      new RegExp(
        `^ {2}cause +${container ? 'container' : 'cap_sys_admin'} +the server runs as root without CAP_SYS_ADMIN`,
        'm',
      ),
    );
    expect(stdout).toMatch(
      container
        ? /^ {2}fix +start the container with --cap-add SYS_ADMIN/m
        : /^ {2}fix +run codexec with CAP_SYS_ADMIN/m,
    );
    expect(stdout).toMatch(/^ {2}missing +sandbox run +bubblewrap could not start a sandbox here/m);
  });
});
