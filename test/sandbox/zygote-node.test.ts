// The node zygote (drivers/zygote.py --node, drivers/zygote_node.mjs, native/node_fork.c): a root
// namespace server forks warm Node drivers from one initialised Node on the host, each into its
// own bwrap-built sandbox. A forked run must be confined as a cold run is, see what a cold run's
// Node sees (its pid, its own random numbers, its clocks, no flags), end as it ends, and leave
// nothing; a template that dies takes only its own runs with it.
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../src/engine/index.js';
import { NODE_FORKS } from '../../src/sandbox/index.js';
import { SANDBOX_ENV, SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

const root = process.getuid?.() === 0;
/** The host's device nodes a cold run's bwrap binds into its /dev. */
const DEV_NODES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty'];
const FORKED = 'require("node:fs").readFileSync("/proc/self/cmdline", "utf8").includes("zygote_node.mjs")';

// Everything the sandbox decides about a process, and what Node took from its start, as the
// program sees it.
const PROBE = `
const fs = require('node:fs');
const os = require('node:os');
const status = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').filter((l) => l.includes(':\\t')).map((l) => l.split(':\\t')));
const cwd = process.cwd();
console.log(JSON.stringify({
  forked: ${FORKED},
  ids: [process.getuid(), process.geteuid(), process.getgid(), process.getegid(), process.getgroups()],
  caps: [status.CapInh, status.CapPrm, status.CapEff, status.CapBnd, status.CapAmb],
  no_new_privs: status.NoNewPrivs,
  seccomp: status.Seccomp,
  signals: [status.SigBlk, status.SigIgn],
  limits: fs.readFileSync('/proc/self/limits', 'utf8').split('\\n').filter((l) => !l.startsWith('Max cpu time')),
  hostname: os.hostname(),
  net: fs.readFileSync('/proc/net/dev', 'utf8').split('\\n').slice(2).filter(Boolean).map((l) => l.split(':')[0].trim()).sort(),
  mounts: fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n').filter(Boolean).map((l) => l.split(' ')[4].replace(cwd, 'WORKSPACE')).filter((m) => !m.endsWith('.mjs')).sort(),
  cgroup: fs.readFileSync('/proc/self/cgroup', 'utf8'),
  env: Object.keys(process.env).sort(),
  home_is_cwd: process.env.HOME === cwd,
  pwd: process.env.PWD === cwd,
  pid: process.pid === Number(fs.readFileSync('/proc/self/stat', 'utf8').split(' ')[0]),
  execArgv: process.execArgv,
  argv: process.argv.length,
  host_home: fs.existsSync('/root'),
  fds: fs.readdirSync('/proc/self/fd').map((fd) => { try { return [Number(fd), fs.readlinkSync('/proc/self/fd/' + fd).replace(/[0-9]+/g, 'N')]; } catch { return [Number(fd), 'gone']; } }),
}));
`;

async function run(server: TestServer, code: string, extra: Record<string, unknown> = {}) {
  const args = { language: 'node', code, ...extra };
  return (await callTool<ExecutionResult>(server.client, 'execute_code', args)).value;
}

/** A run served by a driver forked from the node zygote (the pool fills in the background). */
async function forkedRun(server: TestServer, code: string, extra: Record<string, unknown> = {}) {
  for (let i = 0; i < 50; i++) {
    const value = await run(server, `if (!(${FORKED})) process.exit(99);\n${code}`, extra);
    if (value.exit_code !== 99) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no run was forked from the node zygote');
}

// A run of either zygote's, told apart from a started one by its command line.
const NODE_STAMP = `if (!(${FORKED})) process.exit(99);`;
const PYTHON_STAMP = 'import sys\nif "zygote.py" not in open("/proc/self/cmdline").read(): sys.exit(99)';
const VICTIM: Record<string, string> = {
  node: 'process.on("SIGUSR1", () => { console.log("hit"); process.exit(3); }); setTimeout(() => console.log("untouched"), 3000);',
  python:
    'import signal, sys, time\nsignal.signal(signal.SIGUSR1, lambda *_: (print("hit"), sys.exit(3)))\ntime.sleep(3)\nprint("untouched")',
};
const ATTACKER: Record<string, string> = {
  node: 'process.on("SIGUSR1", () => console.log("own group")); process.kill(0, "SIGUSR1"); setTimeout(() => {}, 100);',
  python:
    'import os, signal, time\nsignal.signal(signal.SIGUSR1, lambda *_: print("own group"))\nos.kill(0, signal.SIGUSR1)\ntime.sleep(0.1)',
};

/** A run of `language` (its code starts with its stamp) once it is served by a fork. */
async function forkedRunOf(server: TestServer, language: string, code: string) {
  for (let i = 0; i < 50; i++) {
    const value = (await callTool<ExecutionResult>(server.client, 'execute_code', { language, code })).value;
    if (value.exit_code !== 99) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no ${language} run was forked`);
}

/** A process's command line; '' once it is gone. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** The children of `pid` (none once it is gone). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
      readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

describe.skipIf(!root || SANDBOX_MODE === 'landlock')('node zygote (root namespace server)', () => {
  let server: TestServer;
  let cold: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '2' } });
    cold = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '0' } });
  });
  afterAll(async () => {
    await Promise.all([server.close(), cold.close()]);
  });

  it('is built here (CI has a C compiler): node runs are forked', () => {
    expect(NODE_FORKS).toBe(true);
  });

  it('confines a forked run exactly as a cold one, and gives it what a started Node has', async () => {
    const forked = JSON.parse((await forkedRun(server, PROBE)).stdout);
    const started = JSON.parse((await run(cold, PROBE)).stdout);
    expect(forked.forked).toBe(true);
    expect(started.forked).toBe(false);
    expect(forked.caps).toEqual(Array(5).fill('0000000000000000'));
    expect(forked.ids.slice(0, 4)).not.toContain(0);
    expect(forked).toMatchObject({ seccomp: '2', no_new_privs: '1', host_home: false, net: ['lo'] });
    expect(forked).toMatchObject({ pid: true, pwd: true, execArgv: [] });
    // Its descriptors: the run's stdio and control channel, then only Node's own (its event loops',
    // /dev/null) and the probe's listing; nothing of the zygote's (its job socket, namespaces,
    // other runs' stdio or pidfds).
    const kinds = (fds: [number, string][]) => fds.filter(([fd]) => fd > 3).map(([, kind]) => kind);
    const own = new Set(['anon_inode:[eventpoll]', 'anon_inode:[eventfd]', 'pipe:[N]', '/dev/null', 'gone']);
    expect(kinds(forked.fds).filter((kind) => !own.has(kind))).toEqual([]);
    expect(forked.fds.filter(([fd]: [number]) => fd <= 3).map(([, kind]: [number, string]) => kind)).toEqual([
      '/dev/null',
      'socket:[N]',
      'socket:[N]',
      'socket:[N]',
    ]);
    for (const probe of [forked, started]) {
      delete probe.forked;
      delete probe.fds;
      // A cold run's Node gets the shim by --import; a warm driver provides it itself.
      delete probe.execArgv;
    }
    // The nest covers /proc/sys read-only besides what bwrap covers (irq, bus), and makes /dev's
    // nodes itself where bwrap binds the host's (test/sandbox/nest.test.ts).
    expect(forked.mounts).toContain('/proc/sys');
    forked.mounts = forked.mounts.filter((mount: string) => mount !== '/proc/sys');
    started.mounts = started.mounts.filter((mount: string) => !DEV_NODES.includes(mount));
    expect(forked).toEqual(started);
  });

  it('gives each fork its own random numbers and clocks from its own start', async () => {
    const code =
      'console.log(JSON.stringify([Math.random(), crypto.randomUUID(), performance.now(), process.uptime()]))';
    const [a, b] = [await forkedRun(server, code), await forkedRun(server, code)].map((r) =>
      JSON.parse(r.stdout),
    );
    expect(a[0]).not.toBe(b[0]);
    expect(a[1]).not.toBe(b[1]);
    for (const [now, uptime] of [a.slice(2), b.slice(2)]) {
      expect(now).toBeGreaterThanOrEqual(0);
      expect(now).toBeLessThan(5000);
      expect(uptime).toBeLessThan(5);
    }
    const spread = await forkedRun(
      server,
      'let lo = 1, hi = 0; for (let i = 0; i < 1e5; i++) { const x = Math.random(); lo = Math.min(lo, x); hi = Math.max(hi, x); } console.log(lo >= 0 && lo < 0.001, hi < 1 && hi > 0.999)',
    );
    expect(spread.stdout).toBe('true true\n');
  });

  it('ends like a cold run: an uncaught exception, exit codes, a timeout, threads and children', async () => {
    const thrown = 'setTimeout(() => { throw new TypeError("boom"); }, 1);';
    const [forked, started] = [await forkedRun(server, thrown), await run(cold, thrown)];
    expect(forked.exit_code).toBe(1);
    // The same report but for the script's path and line (the forked run's has one line more).
    const script = (text: string) => text.replace(/file:\/\/\S+\/_codexec_script\.mjs:\d+/g, 'SCRIPT');
    expect(script(forked.stderr)).toBe(script(started.stderr));
    expect(forked.stderr).toContain('TypeError: boom');
    expect(await forkedRun(server, 'process.exitCode = 7')).toMatchObject({ exit_code: 7, warm: true });
    const slow = await forkedRun(server, 'console.log("up"); setInterval(() => {}, 1000)', {
      timeout_ms: 1500,
    });
    expect(slow).toMatchObject({ stdout: 'up\n', timed_out: true });
    const worker = [
      'const { Worker } = require("node:worker_threads");',
      'new Worker("require(\\"node:worker_threads\\").parentPort.postMessage(6 * 7)", { eval: true })',
      '  .on("message", (n) => console.log("worker", n));',
      'console.log(require("node:child_process").execFileSync("/bin/echo", ["child"], { encoding: "utf8" }).trim());',
      'require("node:fs").promises.readFile("/proc/self/stat", "utf8").then(() => console.log("async fs"));',
    ].join('\n');
    const both = await forkedRun(server, worker);
    expect(both.stdout.split('\n').sort()).toEqual(['', 'async fs', 'child', 'worker 42']);
    expect(both.exit_code).toBe(0);
  });

  it("a forked run's process group is its own: kill(0) reaches no other run (node and python)", async () => {
    const stamp = (language: string) => (language === 'node' ? NODE_STAMP : PYTHON_STAMP);
    for (const language of ['node', 'python']) {
      // The victim waits 3 s for a signal it would report; the other run signals its own group.
      const victim = forkedRunOf(server, language, `${stamp(language)}\n${VICTIM[language]}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const attacker = await forkedRunOf(server, language, `${stamp(language)}\n${ATTACKER[language]}`);
      expect(attacker.stdout).toBe('own group\n');
      expect(await victim).toMatchObject({ stdout: 'untouched\n', exit_code: 0 });
    }
  });

  it('an exit listener that throws ends the run with 1, as a cold run', async () => {
    const code = 'process.on("exit", () => { throw new Error("late"); }); console.log("up")';
    const forked = await forkedRun(server, code);
    expect(forked).toMatchObject({ stdout: 'up\n', exit_code: 1 });
    expect(forked.stderr).toContain('Error: late');
    expect(await run(cold, code)).toMatchObject({ stdout: 'up\n', exit_code: 1 });
  });

  it('ends the runs forked after the template has waited past V8’s memory reducer (8 s)', async () => {
    await forkedRun(server, '');
    // The template's last GC armed the reducer's timer; a fork made or used later fired it and its
    // loop never emptied: each such run ended at its timeout.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    for (let i = 0; i < 3; i++) {
      const value = await forkedRun(server, 'console.log(1)', { timeout_ms: 5000 });
      expect(value).toMatchObject({ stdout: '1\n', exit_code: 0, timed_out: false });
    }
  }, 60_000);

  it('a dead template takes its forks and its zygote with it: the next runs start their Node', async () => {
    await forkedRun(server, '');
    // This server's own (other suites' servers have theirs): its zygote's child.
    const zygote = childrenOf(server.pid).find((pid) => commandOf(pid).includes('/drivers/zygote.py'));
    const template =
      zygote && childrenOf(zygote).find((pid) => commandOf(pid).includes('/drivers/zygote_node.mjs'));
    expect(template).toBeDefined();
    process.kill(template as number, 'SIGKILL');
    // Its waiting forks die with it (PR_SET_PDEATHSIG), and the zygote reports them and exits.
    await expect.poll(() => childrenOf(server.pid), { timeout: 10_000 }).not.toContain(zygote);
    for (let i = 0; i < 6; i++) {
      const value = await run(server, `console.log(${FORKED})`);
      expect(value).toMatchObject({ stdout: 'false\n', exit_code: 0 });
    }
  });
});
