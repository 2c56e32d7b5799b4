// Hostile code, read-only probes, through the real MCP server: in the default mode (namespace on
// Linux) every escape must fail; in subprocess mode the same probes document what that light mode
// does NOT stop (docs/security.md states it from this run). Nothing destructive runs here.
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCKER_MODE, ensureImage, GVISOR, serverRuntime } from '../sandbox/container/engine.js';
import { hostProcessesWith, probeProgram, type Rig, run, startRig } from './probes.js';

const root = process.getuid?.() === 0;

interface Probe {
  secret: { ok: boolean };
  secret_home: { ok: boolean };
  env_canary: boolean;
  proc_hits: string[];
  shadow: { ok: boolean };
  root_dir: { ok: boolean };
  loopback: { ok: boolean; value?: string };
  dns: { ok: boolean; error?: string };
  inet_socket: { ok: boolean };
  abstract_socket: { ok: boolean; error?: string };
  signal_server: { ok: boolean; error?: string };
  unix_socket: { ok: boolean; error?: string };
  sees_server: boolean;
  stat_secret: { ok: boolean };
  writes: Record<string, { ok: boolean }>;
  tmp_seen_before: boolean;
  tmp_write: { ok: boolean };
  tmpdir_seen_before: boolean;
  tmpdir_write: { ok: boolean };
  cap_eff: string;
  uid: number;
  fds: Record<string, string>;
}

// '(non-root)': the server itself runs as uid 65534 (namespace: bwrap in a user namespace; both:
// no cgroups); only where the test runs as root and can switch users.
const MODES = [
  'namespace',
  'landlock',
  'subprocess',
  'docker',
  ...(GVISOR.missing ? [] : ['docker (gVisor)']),
  ...(root ? ['namespace (non-root)', 'landlock (non-root)'] : []),
] as const;
if (GVISOR.missing) console.warn(`hostile read-only probes under gVisor skipped: ${GVISOR.missing}`);

describe.each(MODES)('hostile read-only probes (%s mode)', (label) => {
  const mode = label.split(' ')[0] as 'namespace' | 'landlock' | 'subprocess' | 'docker';
  const nonRoot = label.endsWith('(non-root)');
  const gvisor = label === 'docker (gVisor)';
  const confined = mode !== 'subprocess';
  const id = randomBytes(6).toString('hex');
  const tmpMarker = join('/tmp', `codexec-tmp-marker-${id}`);
  let rig: Rig;
  let writeTargets: string[];
  let first: Probe;
  let second: Probe;
  let firstWarm: boolean;
  let secondWarm: boolean;
  let sandboxMode: string;

  beforeAll(async () => {
    // namespace: the default mode (auto), which must resolve to namespace on this Linux host.
    if (mode === 'docker') ensureImage();
    rig = nonRoot
      ? await startRig({ CODEXEC_SANDBOX_MODE: mode }, 65534)
      : mode === 'docker'
        ? await startRig(gvisor ? GVISOR.env : DOCKER_MODE)
        : await startRig(mode === 'namespace' ? {} : { CODEXEC_SANDBOX_MODE: mode });
    writeTargets = [
      join(rig.home, `pwned-${id}`),
      join(tmpdir(), `codexec-pwned-${id}`),
      join(rig.server.home, `pwned-${id}`),
      join(rig.server.home, 'sandbox', `pwned-${id}`),
    ];
    const program = probeProgram(rig, writeTargets, tmpMarker);
    const a = await run(rig, 'python', program);
    const b = await run(rig, 'python', program);
    expect(a.stderr).toBe('');
    sandboxMode = a.sandbox_mode;
    first = JSON.parse(a.stdout) as Probe;
    second = JSON.parse(b.stdout) as Probe;
    [firstWarm, secondWarm] = [a.warm, b.warm];
  });

  afterAll(async () => {
    for (const path of [...writeTargets, tmpMarker, `${tmpMarker}-own`]) rmSync(path, { force: true });
    await rig.close();
  });

  it(`runs in ${mode} mode`, () => {
    expect(sandboxMode).toBe(mode);
  });

  it.runIf(gvisor)('runs its containers under gVisor (runsc)', async () => {
    expect(await serverRuntime(rig.server)).toBe('runsc');
  });

  it(confined ? 'cannot read secrets in the user home' : 'CAN read secrets in the user home', () => {
    expect(first.secret.ok).toBe(!confined);
    expect(first.secret_home.ok).toBe(!confined);
  });

  it(
    confined ? 'finds no server-env canary anywhere under /proc' : 'FINDS the server-env canary under /proc',
    () => {
      expect(first.env_canary).toBe(false); // the allowlisted env never carries it, in either mode
      if (confined) expect(first.proc_hits).toEqual([]);
      else expect(first.proc_hits.length).toBeGreaterThan(0);
    },
  );

  it(confined ? 'cannot read /etc/shadow or list /root' : 'reads /etc/shadow and /root as root', () => {
    const exposed = !confined && root;
    expect(first.shadow.ok).toBe(exposed);
    expect(first.root_dir.ok).toBe(exposed);
  });

  it(confined ? "cannot reach the host's loopback services or DNS" : 'REACHES host loopback', () => {
    expect(first.loopback.ok).toBe(!confined);
    // namespace and docker runs may open a TCP socket: in a network namespace of their own, whose
    // only interface is their own loopback (docs/security.md); landlock has none, and its seccomp
    // filter refuses the socket itself.
    if (mode === 'landlock') expect(first.inet_socket.ok).toBe(false);
    if (!confined) expect(first.inet_socket.ok).toBe(true);
    if (confined) expect(first.dns.ok).toBe(false);
  });

  it(
    confined ? "cannot reach the host's abstract Unix sockets" : "REACHES the host's abstract Unix sockets",
    () => {
      // namespace, docker: another network namespace; landlock: the run's scope (ABI >= 6).
      expect(first.abstract_socket.ok).toBe(!confined);
    },
  );

  it(
    mode === 'landlock'
      ? "CONNECTS to the host's world-writable pathname Unix sockets (no Landlock rule for them, ABI <= 7)"
      : confined
        ? "cannot reach the host's pathname Unix sockets (its /tmp is its own)"
        : "CONNECTS to the host's world-writable pathname Unix sockets",
    () => {
      expect(first.unix_socket.ok).toBe(!confined || mode === 'landlock');
    },
  );

  it(mode === 'landlock' || !confined ? 'SEES the host’s processes' : 'sees only its own processes', () => {
    // namespace, docker: a pid namespace of the run's own; landlock has none (it still cannot
    // read their environment or memory, or signal them: the tests above and below).
    expect(first.sees_server).toBe(mode === 'landlock' || !confined);
  });

  it(
    mode === 'landlock'
      ? 'can stat (not read) what the sandbox user may search, as Landlock leaves metadata alone'
      : confined
        ? 'cannot even stat the user’s files'
        : 'CAN stat the user’s files',
    () => {
      // A root server's landlock runs are uid 65534, which may not search the test's 0700 home; a
      // non-root server's are its own user, which may.
      const expected = !confined || (mode === 'landlock' && nonRoot);
      expect(first.stat_secret.ok).toBe(expected);
    },
  );

  it(confined ? 'cannot signal the server' : 'CAN signal the server (as its own uid)', () => {
    // namespace, docker: another pid namespace; landlock: the run's scope (ABI >= 6), and a root
    // server's runs are another uid.
    expect(first.signal_server.ok).toBe(!confined);
  });

  it(confined ? 'writes outside the workspace do not land' : 'writes outside the workspace LAND', () => {
    for (const path of writeTargets)
      expect({ path, landed: existsSync(path) }).toEqual({ path, landed: !confined });
  });

  it(confined ? 'has a private /tmp per execution' : 'SHARES the host /tmp between executions', () => {
    // landlock: the host's /tmp is not writable; TMPDIR is a directory of the run's own.
    expect(first.tmp_write.ok).toBe(mode !== 'landlock');
    expect(second.tmp_seen_before).toBe(!confined);
    expect(existsSync(tmpMarker)).toBe(!confined);
    expect(first.tmpdir_write.ok).toBe(true);
    expect(second.tmpdir_seen_before).toBe(!confined);
  });

  it(
    confined ? 'runs with no capabilities, as an unprivileged uid' : 'keeps the server uid and capabilities',
    () => {
      if (confined) {
        expect(first.cap_eff).toBe('0000000000000000');
        expect(first.uid).not.toBe(0);
      } else {
        expect(first.uid).toBe(process.getuid?.());
        expect(first.cap_eff !== '0000000000000000').toBe(root);
      }
    },
  );

  it('receives no file descriptor of the server beyond stdio (warm: its driver’s own three)', () => {
    for (const [probe, warm] of [
      [first, firstWarm],
      [second, secondWarm],
    ] as const) {
      const extra = Object.entries(probe.fds).filter(
        ([fd, target]) => Number(fd) > 2 && target !== '/dev/null' && !target.startsWith('/proc/'),
      );
      // A warm driver keeps its control channel and its copies of stdout and stderr, close-on-exec.
      // gVisor names the pipes it was handed by the host host:[N], and a socket socket:[N].
      const driver = (fd: string, target: string) =>
        ['200', '201', '202'].includes(fd) &&
        (gvisor ? /^(host|socket):\[\d+\]$/ : /^(socket|pipe):/).test(target);
      expect(extra.filter(([fd, target]) => !(warm && driver(fd, target)))).toEqual([]);
    }
  });

  it(
    confined ? 'leaves no background process behind' : 'lets a setsid background process OUTLIVE the run',
    async () => {
      const marker = `${900 + Math.floor(Math.random() * 99)}.${Date.now() % 100000}`;
      // gVisor's processes are not the host's (its Sentry runs them): one that outlived the run
      // would write this file into the workspace a second later.
      const late = gvisor
        ? ["subprocess.Popen(['bash', '-c', 'sleep 1; echo alive > late'], start_new_session=True)"]
        : [];
      const result = await run(
        rig,
        'python',
        [
          'import subprocess',
          ...late,
          'try:',
          `    subprocess.Popen(['sleep', '${marker}'], start_new_session=True)`,
          "    print('new session')",
          'except PermissionError:',
          "    print('no new session')",
          `subprocess.Popen(['sleep', '${marker}'])`,
          "print('started')",
        ].join('\n'),
      );
      // A landlock run with neither a cgroup nor a pid namespace is ended through its process
      // group, which seccomp keeps every process of it in (setsid, setpgid: EPERM).
      const session = mode === 'landlock' && nonRoot ? 'no new session' : 'new session';
      expect(result.stdout).toBe(`${session}\nstarted\n`);
      // The run's end kills what it left; poll until that is done (subprocess mode: one remains).
      await expect.poll(() => hostProcessesWith(marker).length, { timeout: 10_000 }).toBe(confined ? 0 : 1);
      const survivors = hostProcessesWith(marker);
      for (const pid of survivors) process.kill(pid, 'SIGKILL');
      // subprocess mode kills the process group; only the one that left it with setsid survives.
      expect(survivors.length).toBe(confined ? 0 : 1);
      if (gvisor) {
        // What gVisor's sandbox would still do shows as a file: this pause is the time it is given.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        expect(existsSync(join(result.working_dir, 'late'))).toBe(false);
      }
    },
  );
});
