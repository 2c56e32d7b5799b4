// A warm run must be indistinguishable from a cold one: same output, same exit status, for the
// ways programs end (exit codes, exceptions, atexit and exit handlers, threads still running,
// forks, signals, large output). Warm drivers report the status themselves and the run ends
// before the sandbox's teardown, so each case is run both ways and compared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Result {
  stdout: string;
  stderr: string;
  exit_code: number | null;
  warm: boolean;
  working_dir: string;
}

const CASES: ReadonlyArray<readonly [string, string, string]> = [
  ['python', 'exit code', 'import sys\nprint("a")\nsys.exit(3)'],
  ['python', 'exit message', 'import sys\nsys.exit("bye")'],
  ['python', 'exit code past 255', 'raise SystemExit(258)'],
  ['python', 'exception', 'def f():\n    raise ValueError("x")\nf()'],
  ['python', 'syntax error', 'def (:'],
  ['python', 'KeyboardInterrupt', 'raise KeyboardInterrupt'],
  [
    'python',
    'custom excepthook',
    'import sys\nsys.excepthook = lambda *a: print("hooked", file=sys.stderr)\nraise KeyError(1)',
  ],
  ['python', 'atexit', 'import atexit\natexit.register(lambda: print("bye"))\nprint("hi")'],
  [
    'python',
    'non-daemon thread outlives the script',
    'import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), print("late"))).start()\nprint("main")',
  ],
  [
    'python',
    'fork',
    // The child finishes the script first; only the parent's end may end the run.
    'import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\nprint("parent" if pid else "child")',
  ],
  ['python', 'os._exit', 'import os\nprint("x", flush=True)\nos._exit(7)'],
  ['python', 'large output', 'import sys\nsys.stdout.write("x" * 300000)\nsys.stderr.write("e" * 100000)'],
  ['python', 'closes the driver fds', 'import os\nos.closerange(3, 1024)\nprint("closed")'],
  [
    'python',
    'redirects fd 1 to a file for good',
    'import os\nf = open("/tmp/out.txt", "w")\nos.dup2(f.fileno(), 1)\nprint("to the file")\nos.write(2, open("/tmp/out.txt").read().encode())',
  ],
  ['node', 'exitCode', 'process.exitCode = 4; console.log("a")'],
  ['node', 'exit handler', 'process.on("exit", (c) => console.log("exit", c)); console.log("hi")'],
  ['node', 'process.exit', 'console.log("a"); process.exit(9)'],
  ['node', 'timer keeps it alive', 'setTimeout(() => console.log("later"), 50)'],
  ['node', 'large output', 'process.stdout.write("x".repeat(300000))'],
  ['node', 'large output on both streams', 'process.stderr.write("e".repeat(200000)); console.log("done")'],
  // The warm-up leaves nothing behind: the loader's readFile, the streams' own write, listeners.
  [
    'node',
    'no trace of the warm-up',
    'import { promises } from "node:fs"; import * as fsp from "node:fs/promises";\n' +
      'console.log(promises.readFile === fsp.readFile, String(promises.readFile).length, ' +
      'Object.hasOwn(process.stdout, "write"), Object.hasOwn(process.stderr, "write"), ' +
      'process.listenerCount("exit"), process.listenerCount("removeListener"))',
  ],
  // The driver's end mark cannot be written: the run ends with the sandbox instead.
  ['node', 'closes fd 1', 'import { closeSync } from "node:fs"; console.log("a"); closeSync(1)'],
  ['bash', 'exit code', 'echo a; exit 5'],
  ['bash', 'stderr and failure', 'echo err >&2; false'],
  ['bash', 'EXIT trap', "trap 'echo bye' EXIT; echo hi"],
  ['bash', 'killed by a signal', 'echo before; kill -TERM $$; echo after'],
  // The warm driver sources the script in a bash it started ahead (drivers/warm_bash.sh): none of
  // this may tell. ($- may: it has the s of a bash reading commands from standard input.)
  [
    'bash',
    'name, arguments, pid and call stack',
    'echo "$0 $# ${#BASH_SOURCE[@]} [${FUNCNAME[*]}]"; [ "$$" = "$BASHPID" ] && echo own-pid',
  ],
  [
    'bash',
    'no driver variable or file descriptor is set, and the status of an unbound one',
    // (Bash keeps the script it runs open on fd 255; a sourced one is not. No pipeline: the pipe's
    // fds would come and go as the listing is made.)
    'echo "[${told-}${size-}${count-}${mark-}${commands-}${heard-}]"\n' +
      'for fd in /proc/$$/fd/*; do [ "${fd##*/}" = 255 ] || echo "${fd##*/}"; done\n' +
      'set -u; echo "${job[0]}"',
  ],
  ['bash', 'redirects stdin, then ends', 'exec < "$0"\nread -r line\necho "first: $line"'],
  ['bash', 'stdin is empty', 'cat; echo done'],
  ['bash', 'background process still writing', '(sleep 0.3; echo late) & echo now'],
];

/** The per-run workspace differs between runs (tracebacks name the script's path). */
const normalize = (text: string, dir: string) =>
  text
    .split(dir)
    .join('<workspace>')
    .replace(/exec_[0-9a-f]{12}/g, '<execution_id>');

describe.each(['namespace', 'subprocess'])('warm runs match cold runs (%s mode)', (mode) => {
  let warm: TestServer;
  let cold: TestServer;
  beforeAll(async () => {
    [warm, cold] = await Promise.all([
      startServer({ env: { CODEXEC_SANDBOX_MODE: mode, CODEXEC_POOL_SIZE: '1' } }),
      startServer({ env: { CODEXEC_SANDBOX_MODE: mode, CODEXEC_POOL_SIZE: '0' } }),
    ]);
  });
  afterAll(() => Promise.all([warm.close(), cold.close()]));

  async function run(server: TestServer, language: string, code: string, wantWarm: boolean) {
    for (let i = 0; i < 50; i++) {
      const { value } = await callTool<Result>(server.client, 'execute_code', { language, code });
      if (value.warm === wantWarm) return value;
      await new Promise((resolve) => setTimeout(resolve, 100)); // the pool is still starting
    }
    throw new Error(`no ${wantWarm ? 'warm' : 'cold'} run`);
  }

  it.each(CASES)('%s: %s', async (language, _name, code) => {
    const [a, b] = await Promise.all([run(warm, language, code, true), run(cold, language, code, false)]);
    const shape = (r: Result) => ({
      exit_code: r.exit_code,
      stdout: normalize(r.stdout, r.working_dir),
      stderr: normalize(r.stderr, r.working_dir),
    });
    expect(shape(a)).toEqual(shape(b));
  });
});
