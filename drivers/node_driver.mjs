// codexec session driver for JavaScript (and TypeScript, transpiled by the server first).
//
// Protocol on fd 3: frames of `<byte length in decimal>\n<UTF-8 JSON>`. In:
// {"type":"exec","id","mark"?,"code"}; a mark is written on stdout and stderr as "\n<mark>\n"
// after the cell's output (the server then knows all of it is in). Out: {"type":"ready"} once, then {"type":"done","id","status",
// "exit_code"} per exec, written after the cell's output (stdout/stderr writes to pipes are
// synchronous on Linux). User output never travels on fd 3.
//
// Cells run as classic scripts in this realm (like the Node REPL with useGlobal), so let/const/
// class/function declarations persist across cells and the completion value is the cell's
// value. Cells with top-level `await` are rewritten by Node's own REPL transform (hoisting the
// declarations), loaded with --expose-internals; without it they run in a plain async wrapper.
// SIGINT breaks synchronous code (breakOnSigint) and abandons a pending await; state is kept.

import { builtinModules, createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import util from 'node:util';
import vm from 'node:vm';

const here = createRequire(import.meta.url);
let processTopLevelAwait;
try {
  ({ processTopLevelAwait } = here('internal/repl/await'));
} catch {
  processTopLevelAwait = (code) => (/\bawait\b/.test(code) ? `(async () => {\n${code}\n})()` : null);
}

const cwdRequire = createRequire(path.join(process.cwd(), '<session>'));
globalThis.require = cwdRequire;

function importFromCwd(specifier) {
  if (specifier.startsWith('node:') || builtinModules.includes(specifier)) return import(specifier);
  try {
    return import(pathToFileURL(cwdRequire.resolve(specifier)).href);
  } catch {
    const local = specifier.startsWith('.') || specifier.startsWith('/');
    return import(local ? pathToFileURL(path.resolve(specifier)).href : specifier);
  }
}

// Node's own loader resolves `import()` from the working directory, honouring package exports.
const defaultLoader = vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER ?? importFromCwd;

// Static imports in cells arrive rewritten to `__codexecImport(...)`: Node's loader first, then,
// for a bare name it cannot find, NODE_PATH (the session's own and the global installs, which
// the ESM loader ignores) the way `require` looks.
const loaderImport = new vm.Script('(specifier) => import(specifier)', {
  filename: '<import>',
  importModuleDynamically: defaultLoader,
}).runInThisContext();
Object.defineProperty(globalThis, '__codexecImport', {
  value: async (specifier) => {
    try {
      return await loaderImport(specifier);
    } catch (error) {
      const bare = !/^[./]/.test(specifier) && !specifier.includes(':');
      if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !bare) throw error;
      let resolved;
      try {
        resolved = cwdRequire.resolve(specifier);
      } catch {
        throw error;
      }
      return import(pathToFileURL(resolved).href);
    }
  },
});

// A cell's own `import()` looks where its static imports look (the session's installs too).
const importInCell = (specifier) => globalThis.__codexecImport(specifier);

let cellCount = 0;
let interruptPending = null;

process.on('SIGINT', () => {
  // Sync code is stopped by breakOnSigint; here we only abandon a pending top-level await.
  interruptPending?.();
});
// Errors thrown later by timers or promises belong to the user, not to the driver: report them.
process.on('uncaughtException', (error) => {
  process.stderr.write(`Uncaught ${formatError(error)}\n`);
});
process.on('unhandledRejection', (reason) => {
  process.stderr.write(`Unhandled promise rejection: ${formatError(reason)}\n`);
});

function formatError(error) {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return util.inspect(error);
  const driver = import.meta.url.replace('file://', '');
  return error.stack
    .split('\n')
    .filter((line) => !(line.includes(driver) || /\((node:|internal\/)|at node:/.test(line)))
    .join('\n');
}

async function runCell(code) {
  cellCount += 1;
  const filename = `<cell ${cellCount}>`;
  let wrapped = null;
  // Parsing for the transform costs more than most cells: only cells that mention await pay it.
  if (code.includes('await')) {
    try {
      wrapped = processTopLevelAwait(code);
    } catch {
      wrapped = null; // not parseable: let V8 report the syntax error for the original code
    }
  }
  const script = new vm.Script(wrapped ?? code, { filename, importModuleDynamically: importInCell });
  let value = script.runInThisContext({ breakOnSigint: true, displayErrors: true });
  if (wrapped !== null) {
    const interrupted = new Promise((_, reject) => {
      interruptPending = () => reject(new Error('Script execution was interrupted by `SIGINT`'));
    });
    try {
      value = (await Promise.race([value, interrupted]))?.value;
    } finally {
      interruptPending = null;
    }
  }
  if (value !== undefined) process.stdout.write(`${util.inspect(value)}\n`);
}

async function execute(code) {
  try {
    await runCell(code);
    return { status: 'ok', exit_code: 0 };
  } catch (error) {
    const interrupted = error instanceof Error && /interrupted by `SIGINT`/.test(error.message);
    process.stderr.write(
      `${interrupted ? 'Interrupted: execution stopped by SIGINT' : formatError(error)}\n`,
    );
    return interrupted ? { status: 'interrupted', exit_code: 130 } : { status: 'error', exit_code: 1 };
  }
}

const control = new net.Socket({ fd: 3, readable: true, writable: true });
const send = (message) => {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  control.write(Buffer.concat([Buffer.from(`${body.length}\n`), body]));
};

// Background processes (start_process), as python_driver.py serves them: `bash -c command` in a
// process group of its own, SIGINT ignored, stdout and stderr on one pipe. Served from the event
// loop: between cells and while a cell awaits; a cell that keeps the loop busy holds them. Where
// the sandbox refuses setsid (landlock mode without a cgroup), which Node's spawn does not report,
// the process stays in the driver's group: a kill then stops and kills its process tree instead.
const RELAY_BYTES_PER_SECOND = 2 * 1024 * 1024;
const processes = new Map();

function handleProcess(message) {
  const { type, proc } = message;
  const child = processes.get(proc);
  try {
    if (type === 'proc_start') startProcess(proc, message.command);
    else if (type === 'proc_stdin' && child) {
      if (message.data) child.stdin.write(Buffer.from(message.data, 'base64'));
      if (message.eof) child.stdin.end();
    } else if (type === 'proc_kill' && child) killProcess(child);
  } catch (error) {
    send({ type: 'proc_error', proc: proc ?? null, message: String(error?.message ?? error) });
  }
}

function killProcess(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch (error) {
    // No group of its own; once it has exited its pid may be another's.
    if (error.code !== 'ESRCH' || child.exitCode !== null || child.signalCode !== null) return;
    killTree(child.pid);
  }
}

/** SIGKILL `pid` and its descendants, stopped first so that none forks a child the kill misses. */
function killTree(pid) {
  const stopped = new Set();
  for (let round = 0; round < 100; round++) {
    const tree = treeOf(pid).filter((each) => !stopped.has(each));
    if (tree.length === 0) break;
    for (const each of tree) {
      signalQuietly(each, 'SIGSTOP');
      stopped.add(each);
    }
  }
  for (const each of stopped) signalQuietly(each, 'SIGKILL');
}

function signalQuietly(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // gone
  }
}

/** `pid` and its descendants now, from /proc (a process orphaned before is not among them). */
function treeOf(pid) {
  const { readdirSync, readFileSync } = here('node:fs');
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue;
    }
    // pid (comm) state ppid …; comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i]) ?? []));
  return found;
}

function startProcess(proc, command) {
  const { spawn } = here('node:child_process'); // here, not at start-up: most sessions start none
  const child = spawn('bash', ['-c', 'trap "" INT QUIT; exec 2>&1; eval "$1"', 'codexec-process', command], {
    detached: true,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  if (child.pid === undefined) {
    child.once('error', (error) => send({ type: 'proc_error', proc, message: error.message }));
    return;
  }
  processes.set(proc, child);
  send({ type: 'proc_started', proc, pid: child.pid });
  child.stdin.on('error', () => {}); // the process closed its stdin or exited
  let window = Date.now();
  let sent = 0;
  child.stdout.on('data', (data) => {
    send({ type: 'proc_output', proc, data: data.toString('base64') });
    // A flood would keep the server busy decoding: past the rate the process waits on its pipe.
    sent += data.length;
    if (sent < RELAY_BYTES_PER_SECOND) return;
    child.stdout.pause();
    setTimeout(
      () => {
        window = Date.now();
        sent = 0;
        child.stdout.resume();
      },
      Math.max(0, window + 1000 - Date.now()),
    );
  });
  const relayed = new Promise((resolve) => child.stdout.once('close', resolve));
  child.once('exit', (code, signal) => {
    // Its output first; a descendant that keeps the pipe open does not hold the exit back long.
    const late = new Promise((resolve) => setTimeout(resolve, 1000));
    Promise.race([relayed, late]).then(() => send({ type: 'proc_exit', proc, exit_code: code, signal }));
  });
}

let buffer = Buffer.alloc(0);
let queue = Promise.resolve();
control.on('data', (chunk) => {
  buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
  for (;;) {
    const newline = buffer.indexOf(10);
    if (newline < 0) return;
    const size = Number(buffer.subarray(0, newline).toString('latin1'));
    if (buffer.length < newline + 1 + size) return;
    const message = JSON.parse(buffer.subarray(newline + 1, newline + 1 + size).toString('utf8'));
    buffer = buffer.subarray(newline + 1 + size);
    if (message.type?.startsWith?.('proc_')) handleProcess(message);
    if (message.type !== 'exec') continue;
    queue = queue.then(async () => {
      const outcome = await execute(message.code);
      if (message.mark) {
        for (const stream of [process.stdout, process.stderr]) stream.write(`\n${message.mark}\n`);
      }
      send({ type: 'done', id: message.id, ...outcome });
    });
  }
});
control.on('end', () => process.exit(0));
control.on('error', () => process.exit(0));

send({ type: 'ready', pid: process.pid, version: process.version });
