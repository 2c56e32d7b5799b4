// The runs bench/speed.mjs times: a one-shot `print(1)` over MCP, a session send of the same code,
// and the bare interpreter spawned outside codexec, each checked for success and output `1\n`.
// A Series gathers one kind's latencies and failures; the first few failures are printed.
import { spawn, spawnSync } from 'node:child_process';
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
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: CLEAN_ENV, stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.once('error', (error) =>
      resolve([performance.now() - started, failed(`bare ${language}`, error.message)]),
    );
    child.once('close', (status) => {
      const ok = status === 0 && stdout === EXPECTED;
      resolve([performance.now() - started, ok || failed(`bare ${language}`, { status, stdout })]);
    });
  });
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
