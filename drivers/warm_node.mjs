// Warm-pool driver: a pre-started Node that waits for one ES module, imports it as the main
// program, and exits when it is done. Used once, then discarded: no state outlives the run.
// Protocol on fd 3: the driver says "R\n" once warmed up; the server sends the job's length in
// bytes and "\n", then the job: an end mark, the script path and its arguments, NUL-separated; then
// end of file (its half-close). Once the 'exit' listeners have run, the driver writes the end mark
// on stdout and stderr (after all the program's output: Node's writes to pipes that are still
// pending at 'exit' are never written) and the exit status back as "<status>\n", so the server need
// wait neither for Node's teardown nor for the sandbox's exit. After an uncaught exception Node
// prints the error only after 'exit': then it writes nothing and the server waits for the real exit.
import { readSync, writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const CONTROL = 3;
// Node creates process.stdout/stderr on first use, which costs a first console.log ~3 ms: create
// them now (the same fds the program will write to).
void process.stdout;
void process.stderr;
// The first import() of a file, the shim's builtins and the first console.log each compile what
// they run (~1 ms each, measured): run them once now, on nothing the program can see.
await import('./warm_node_prime.mjs');
writeSync(CONTROL, 'R\n'); // warmed up: waiting for the job
// Read by its length: the server's half-close after it comes only once its event loop turns.
let data = Buffer.alloc(0);
let size;
const buffer = Buffer.alloc(65536);
while (size === undefined || data.length < size) {
  let n;
  try {
    n = readSync(CONTROL, buffer, 0, buffer.length, null);
  } catch (error) {
    if (error.code === 'EAGAIN') continue;
    throw error;
  }
  if (n === 0) process.exit(0); // the pool shut down without a (whole) job
  data = Buffer.concat([data, buffer.subarray(0, n)]);
  const newline = size === undefined ? data.indexOf(10) : -1;
  if (newline !== -1) {
    size = Number(data.subarray(0, newline).toString());
    data = data.subarray(newline + 1);
  }
}
const [endMark, script, ...args] = data.toString('utf8').split('\0');
process.argv = [process.argv[0], script, ...args];

let fatal = false;
process.on('uncaughtExceptionMonitor', () => {
  fatal = true;
});
const emit = process.emit;
process.emit = function (event, ...rest) {
  const result = emit.call(this, event, ...rest);
  if (event === 'exit' && !fatal) {
    try {
      if (endMark) for (const fd of [1, 2]) writeAll(fd, endMark);
      writeSync(CONTROL, `${(process.exitCode ?? rest[0] ?? 0) & 0xff}\n`);
    } catch {
      // the program closed fd 1, 2 or 3: the server waits for the exit instead
    }
  }
  return result;
};
await import(pathToFileURL(script).href);

/** libuv may have made the pipe non-blocking: a full one answers EAGAIN until the server reads. */
function writeAll(fd, text) {
  for (;;) {
    try {
      return writeSync(fd, text);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
    }
  }
}
