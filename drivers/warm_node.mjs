// Warm-pool driver: a pre-started Node that waits for one ES module, imports it as the main
// program, and exits when it is done. Used once, then discarded: no state outlives the run.
// Protocol on fd 3: the driver says "R\n" once warmed up; the server sends a header, "<bytes>
// <fields>\n", then the job: an end mark, the script path and its arguments, each ended by a NUL.
// Once the 'exit' listeners have run, the driver writes the end mark on stdout and stderr (after
// all the program's output: Node's writes to pipes that are still pending at 'exit' are never
// written) and the exit status back as "<status>\n", so the server need wait neither for Node's
// teardown nor for the sandbox's exit; Node exits once the channel ends (the server's half-close,
// or its kill of a sandbox it holds stopped: then the teardown comes after the result). After an
// uncaught exception Node prints the error only after 'exit': then it writes nothing and the
// server waits for the real exit.
import { closeSync, promises as fsPromises, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { provideGlobals } from './node_program.mjs';

const CONTROL = 3;
const readFileOfNode = fsPromises.readFile;
// Node creates process.stdout/stderr on first use, which costs a first console.log ~3 ms: create
// them now (the same fds the program will write to).
void process.stdout;
void process.stderr;
// The first import() of a file, the shim's builtins and console.log's formatting each compile
// what they run (~1 ms each, measured): run them once now, on nothing the program can see.
// Imported as the program is (by its absolute file URL): the loader's path for that, compiled too.
readNextModuleAtOnce();
await import(pathToFileURL(fileURLToPath(new URL('./warm_node_prime.mjs', import.meta.url))).href);
// Used for the program only where the loader was seen to read the prime module through it.
const loaderReadsThrough = fsPromises.readFile === readFileOfNode;
fsPromises.readFile = readFileOfNode;
// Every step from the job to the program's first line runs here once too, on a dummy: JavaScript
// run for the first time is compiled then, which cost a paced run ~1.5 ms between the job's
// arrival and its import (measured with monotonic stamps in the driver and in the server).
rehearse();
// The program's console.log and stream writes, once each: the global console's binding to the
// streams and the pipes' write path (an empty write: nothing reaches the reader).
for (const stream of [process.stdout, process.stderr]) {
  const method = stream === process.stdout ? 'log' : 'error';
  const own = Object.getOwnPropertyDescriptor(stream, 'write');
  stream.write = () => true;
  // biome-ignore lint/suspicious/noConsole: the program's console, rehearsed on a muted stream
  console[method]('%s', 1, {});
  // biome-ignore lint/suspicious/noConsole: a value first, then the usual kinds
  console[method](1, 'a', [1], { a: 1 });
  if (own) Object.defineProperty(stream, 'write', own);
  else delete stream.write; // the stream's own write again, as the program would find it
  stream.write('');
}
await new Promise((resolve) => setImmediate(resolve)); // the empty writes' callbacks: before the job

// Forked by the node zygote (zygote_node.mjs): its fork() returns in the run's own process.
const zygote = globalThis[Symbol.for('codexec.zygote')];
let endMark; // set once the job is in: no job (the pool shut down), nothing to report
let fatal = false;
process.on('uncaughtExceptionMonitor', () => {
  fatal = true;
});
const emit = process.emit;
process.emit = function (event, ...rest) {
  let result;
  try {
    result = emit.call(this, event, ...rest);
  } catch (error) {
    // An 'exit' listener threw: Node reports it as uncaught and ends with 1, after a teardown a
    // fork cannot make.
    if (event === 'exit' && zygote) zygote.exitAfterReport(1);
    throw error;
  }
  if (event === 'exit' && endMark !== undefined && !fatal) {
    try {
      if (endMark) for (const fd of [1, 2]) writeAll(fd, endMark);
      writeSync(CONTROL, `${(process.exitCode ?? rest[0] ?? 0) & 0xff}\n`);
      const drained = Buffer.alloc(64);
      while (readSync(CONTROL, drained) > 0); // until the channel ends (EAGAIN if non-blocking: go)
    } catch {
      // the program closed fd 1, 2 or 3: the server waits for the exit instead
    }
  }
  if (event === 'exit' && zygote) {
    const code = Number(process.exitCode ?? rest[0] ?? 0) & 0xff;
    if (fatal) zygote.exitAfterReport(code);
    else zygote.exit(code);
  }
  return result;
};
process.emit('codexec-rehearsal'); // an event no one listens to, through the wrapper above
await zygote?.fork();
writeSync(CONTROL, 'R\n'); // warmed up: waiting for the job
const [mark, script, ...args] = readJob(CONTROL);
endMark = mark;
process.argv = [process.argv[0], script, ...args];
provideGlobals(script); // what node_globals.mjs gives a cold run

if (loaderReadsThrough) readNextModuleAtOnce();
await import(pathToFileURL(script).href);

/**
 * Node's loader reads a module with fs.promises.readFile: four trips through the thread pool
 * (open, stat, read, close), ~0.4 ms of a paced run. Until its next call it reads at once, and
 * that call puts Node's own function back, before any line of the module runs.
 */
function readNextModuleAtOnce() {
  fsPromises.readFile = async function readFile(path, options) {
    fsPromises.readFile = readFileOfNode;
    return readFileSync(path, options);
  };
}

/**
 * The job's fields, read by its length: the server's half-close after it comes only once its
 * event loop turns. Exits at end of file before a whole job (the pool shut down).
 */
function readJob(fd) {
  const buffer = Buffer.alloc(65536);
  const job = { data: Buffer.alloc(0), size: undefined };
  while (job.size === undefined || job.data.length < job.size) {
    let n;
    try {
      n = readSync(fd, buffer, 0, buffer.length, null);
    } catch (error) {
      if (error.code === 'EAGAIN') continue;
      throw error;
    }
    if (n === 0) process.exit(0);
    take(job, buffer.subarray(0, n));
  }
  return fields(job);
}

/** The job's NUL-ended fields. */
function fields(job) {
  return job.data.subarray(0, job.size).toString('utf8').split('\0').slice(0, -1);
}

function take(job, chunk) {
  job.data = Buffer.concat([job.data, chunk]);
  const newline = job.size === undefined ? job.data.indexOf(10) : -1;
  if (newline !== -1) {
    job.size = Number(job.data.subarray(0, newline).toString().split(' ')[0]); // "<bytes> <fields>"
    job.data = job.data.subarray(newline + 1);
  }
}

/** The job's path on dummies: a job read from /dev/null's end of file, parsed, and its URL. */
function rehearse() {
  const job = { data: Buffer.alloc(0), size: undefined };
  take(job, Buffer.from('7 3\n\0/x\0-a\0'));
  fields(job);
  void pathToFileURL('/x').href;
  // Node's entry point takes an 'exit' listener off once the program is done.
  process.on('exit', rehearse);
  process.removeListener('exit', rehearse);
  let devnull;
  try {
    devnull = openSync('/dev/null', 'r+');
    readSync(devnull, Buffer.alloc(1), 0, 1, null);
    writeAll(devnull, '\n[end]');
  } catch {
    // no /dev/null here: those two are compiled with the job instead
  } finally {
    if (devnull !== undefined) closeSync(devnull);
  }
}

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
