// The runs bench/speed.mjs times: a one-shot `print(1)` over MCP, a session send of the same code,
// the bare interpreter spawned outside codexec, and the sandbox floor (the same program under
// bubblewrap alone), each checked for success and output `1\n`.
// A Series gathers one kind's latencies and failures; the first few failures are printed.
import { spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentiles } from './lib.mjs';

export const CODE = { python: 'print(1)', node: 'console.log(1)', bash: 'echo 1' };
const EXPECTED = '1\n';
/** The bare interpreters, started as codexec's drivers are not: isolated Python, no site. */
const BARE = {
  python: ['python3', '-I', '-S', '-c', CODE.python],
  node: [process.execPath, '-e', CODE.node],
  bash: ['bash', '-c', CODE.bash],
};
// A clean environment: an inherited NODE_EXTRA_CA_CERTS alone doubles node's start-up.
export const CLEAN_ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };

let reported = 0;
function failed(what, detail) {
  if (reported++ < 5)
    console.error(`  FAILED ${what}: ${String(JSON.stringify(brief(detail))).slice(0, 400)}`);
  return false;
}

/** What tells one failed result from another: its status and output, not its paths. */
function brief(result) {
  if (typeof result !== 'object' || result === null) return result;
  const { success, exit_code, warm, duration_ms, stdout, stderr, error } = result;
  return { success, exit_code, warm, duration_ms, stdout, stderr: stderr?.slice(0, 200), error };
}

/** Latencies (ms) and failures of one kind of run. */
export class Series {
  times = [];
  failures = 0;
  add([took, ok]) {
    this.times.push(took);
    if (!ok) this.failures++;
  }
  get n() {
    return this.times.length;
  }
  stats() {
    return { ...percentiles(this.times), failures: this.failures };
  }
}

async function timed(what, call) {
  const started = performance.now();
  let result;
  try {
    result = await call();
  } catch (error) {
    return [performance.now() - started, failed(what, error.message)];
  }
  const took = performance.now() - started;
  return [took, (result?.success === true && result.stdout === EXPECTED) || failed(what, result)];
}

/**
 * A task for lib.mjs measure(): execute_code one-shots of python, node and bash in turn, each of
 * which must succeed with `1\n` (a failure throws).
 */
export function mixedOneShots(server) {
  const languages = Object.keys(CODE);
  let next = 0;
  return async () => {
    const language = languages[next++ % languages.length];
    const result = await server.call('execute_code', { language, code: CODE[language] });
    if (result?.success !== true || result.stdout !== EXPECTED)
      throw new Error(`${language}: ${JSON.stringify(brief(result))}`);
  };
}

/** One execute_code `print(1)`: [ms, ok]. */
export const oneShot = (server, language) =>
  timed(`execute_code ${language}`, () => server.call('execute_code', { language, code: CODE[language] }));

/** One send_to_session of the same code to a running session: [ms, ok]. */
export const send = (server, sessionId, language) =>
  timed(`send_to_session ${language}`, () =>
    server.call('send_to_session', { session_id: sessionId, code: CODE[language] }),
  );

/** The bare interpreter, spawnSync'd (one at a time): [ms, ok]. */
export function bareSync(language) {
  const [command, ...args] = BARE[language];
  const started = performance.now();
  const child = spawnSync(command, args, { env: CLEAN_ENV, encoding: 'utf8' });
  const took = performance.now() - started;
  const ok = child.status === 0 && child.stdout === EXPECTED;
  return [took, ok || failed(`bare ${language}`, { status: child.status, stdout: child.stdout })];
}

/** The bare interpreter, spawned (for concurrent runs): [ms, ok]. */
export function bare(language) {
  const [command, ...args] = BARE[language];
  return spawned(`bare ${language}`, [command, args], EXPECTED);
}

/** `argv` spawned with a clean environment, checked for exit status 0 and stdout `expected`. */
function spawned(what, [command, args], expected, started = performance.now()) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: CLEAN_ENV, stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.once('error', (error) => resolve([performance.now() - started, failed(what, error.message)]));
    child.once('close', (status) => {
      const ok = status === 0 && stdout === expected;
      resolve([performance.now() - started, ok || failed(what, { status, stdout })]);
    });
  });
}

// The sandbox floor: what codexec's namespace mode runs, under bubblewrap alone. Namespace mode's
// namespaces and mounts (as root), but no seccomp filter, no cgroup, no uid drop, no launcher:
// cheaper than any real sandbox. Node runs its code as an ES module file with codexec's shim line,
// bash a script file; python counts as `/usr/bin/true` under bwrap, since codexec's python runs
// are forks of a warm zygote (~3 ms) and the floor must not charge a full python start-up.
// A copy of NODE_SHIM in src/runtimes/languages.ts (bench does not import src).
const NODE_SHIM =
  "import { createRequire as __codexecRequire } from 'node:module'; import { fileURLToPath as __codexecPath } " +
  "from 'node:url'; const require = __codexecRequire(import.meta.url); const __filename = " +
  '__codexecPath(import.meta.url); const __dirname = __codexecPath(new URL(".", import.meta.url));';
const SANDBOXED = {
  python: { argv: ['/usr/bin/true'], expected: '' },
  node: { file: ['main.mjs', `${NODE_SHIM} ${CODE.node}\n`], argv: [process.execPath], expected: EXPECTED },
  bash: { file: ['main.sh', `${CODE.bash}\n`], argv: ['/usr/bin/bash'], expected: EXPECTED },
};
// The root directories as the host has them: merged-/usr symlinks, or directories bound read-only.
const ROOTS = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'].flatMap((name) => {
  try {
    const link = lstatSync(`/${name}`).isSymbolicLink();
    return link ? ['--symlink', `usr/${name}`, `/${name}`] : ['--ro-bind', `/${name}`, `/${name}`];
  } catch {
    return [];
  }
});

/** bwrap's command line for one run in `workspace` (bound read-write, the working directory). */
function sandboxArgs(workspace, command) {
  return [
    ...['--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net'],
    ...['--cap-drop', 'ALL', '--die-with-parent', '--new-session', '--hostname', 'codexec', '--clearenv'],
    ...['--setenv', 'HOME', workspace, '--setenv', 'PATH', '/usr/bin:/bin', '--setenv', 'LANG', 'C.UTF-8'],
    ...['--ro-bind', '/usr', '/usr', ...ROOTS, '--ro-bind', '/etc', '/etc'],
    ...['--proc', '/proc', '--dev', '/dev'],
    ...['--perms', '1777', '--tmpfs', '/tmp', '--perms', '1777', '--tmpfs', '/dev/shm'],
    ...['--bind', workspace, workspace, '--chdir', workspace, ...command],
  ];
}

/** The sandbox floor: one run under bubblewrap in a fresh workspace, removed after: [ms, ok]. */
export async function sandboxed(language) {
  const { file, argv, expected } = SANDBOXED[language];
  const started = performance.now();
  const workspace = mkdtempSync(join(tmpdir(), 'codexec-floor-'));
  try {
    if (file) writeFileSync(join(workspace, file[0]), file[1]);
    const command = file ? [...argv, join(workspace, file[0])] : argv;
    return await spawned(
      `sandboxed ${language}`,
      ['bwrap', sandboxArgs(workspace, command)],
      expected,
      started,
    );
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** Run `task(i)` for i = 0 … count-1 with `concurrency` workers into `series`; the wall time in ms. */
export async function concurrently(task, { count, concurrency, series }) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) series.add(await task(next++));
    }),
  );
  return performance.now() - started;
}

export const sleep = (msecs) => new Promise((resolve) => setTimeout(resolve, Math.max(0, msecs)));
