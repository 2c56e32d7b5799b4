// The node zygote: a Node of the sandbox's, started once by drivers/zygote.py on the host as root
// and initialised as a warm driver is (warm_node.mjs up to its wait for a job), that then forks
// itself once per run (native/node_fork.c) instead of each run paying Node's start-up (~26 ms of
// CPU here against a few for a fork). It never runs code it was sent.
//
// Started as `node zygote_node.mjs ADDON FD` with descriptors 0 to 15 open (the addon's RESERVED),
// stdout and stderr sockets as a run's are, and FD the job socket to zygote.py. Each fork gets its
// stdio in place (0-3, fd 3 the control channel) from the addon, then confines itself here as
// zygote.py's become_program does a Python fork, before warm_node.mjs goes on to its job.
import { writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const [addonPath, socket] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const addon = require(addonPath);

const PR_SET_PDEATHSIG = 1;
const PR_SET_DUMPABLE = 4;
const PR_SET_NO_NEW_PRIVS = 38;
const CLONE_NEWCGROUP = 0x02000000;
/** setns(2) types of the namespaces a job's descriptors are, in the order joined (zygote.py). */
const NAMESPACE_TYPES = { ipc: 0x08000000, uts: 0x04000000, net: 0x40000000, mnt: 0x00020000 };
/** bash's ulimit flags as the server sends them: the resource and bash's unit (forker.py). */
const RLIMITS = {
  '-v': [9, 1024],
  '-f': [1, 1024],
  '-n': [7, 1],
  '-c': [4, 1024],
  '-t': [0, 1],
  '-d': [2, 1024],
  '-u': [6, 1],
};
const SIGKILL = 9;
/**
 * A scavenge of V8's young generation, run before each fork: a fork would otherwise inherit what
 * the zygote allocated since the last, and its first scavenge, on the run's path, would copy the
 * pages it moves objects through from the zygote's (~3 ms a run here). The flag that exposes
 * gc() is off again at once: a context the program makes has no gc().
 */
const emptyNewSpace = (() => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  setFlagsFromString('--no-expose-gc');
  return () => gc({ type: 'minor' });
})();
/** What the zygote's own start-up took, for the clocks a run reads from its process's start. */
let forkedAt = 0;

/**
 * Called by warm_node.mjs once warmed up, where a started driver would say it is ready: resolves
 * in a forked child, confined, with the run's stdio; the zygote itself never returns from here.
 */
globalThis[Symbol.for('codexec.zygote')] = {
  async fork() {
    const job = addon.serve(Number(socket), emptyNewSpace);
    forkedAt = performance.now();
    try {
      become(JSON.parse(job.text), job.fds);
      renew();
    } catch (error) {
      // Never run on half confined (nor wait in a teardown this fork cannot make), as zygote.py's.
      process.stderr.write(`codexec node zygote: ${error}\n`);
      addon.exitGroup(127);
    }
    // The loader's state for an import, written now rather than on the run's path (its pages are
    // the zygote's until a fork writes them: a copy each).
    await import('data:text/javascript,export default 1');
    // Nothing of this for the program to find (warm_node.mjs holds what it needs).
    delete globalThis[Symbol.for('codexec.zygote')];
    delete require.cache[require.resolve(addonPath)];
  },
  /** The run's end once the program is done and reported: Node's teardown is the zygote's, not ours. */
  exit(code) {
    addon.exitGroup(code);
  },
  /**
   * After an uncaught exception Node prints it after 'exit', then tears down: threads this fork
   * does not have make that crash or hang, so the run ends with `code` at either.
   */
  exitAfterReport(code) {
    addon.exitOnFault(code);
  },
};

/** Confine this process as bwrap and the drop program confine a cold run (zygote.py's become_program). */
function become(job, fds) {
  const { sandbox } = job;
  addon.prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The zygote is outside the sandbox's pid namespace: 0, until it is gone.
  if (job.pid_namespace && process.ppid !== 0) addon.exitGroup(1);
  for (const directory of job.cgroup) writeFileSync(join(directory, 'cgroup.procs'), '0');
  addon.unshare(CLONE_NEWCGROUP);
  job.namespaces.forEach((name, i) => {
    addon.setns(fds[i], NAMESPACE_TYPES[name]);
    addon.close(fds[i]);
  });
  const ulimit = job.ulimit;
  for (let i = 0; i + 1 < ulimit.length; i += 2) {
    const [resource, unit] = RLIMITS[ulimit[i]];
    addon.setrlimit(resource, Number(ulimit[i + 1]) * unit);
  }
  process.chdir(sandbox.cwd);
  addon.dropCapabilities();
  addon.prctl(PR_SET_NO_NEW_PRIVS, 1);
  addon.become(sandbox.uid, sandbox.gid);
  // A uid change marks the process undumpable, which would make its /proc/self root's.
  addon.prctl(PR_SET_DUMPABLE, 1);
  if (job.seccomp) addon.seccomp(Buffer.from(job.seccomp, 'hex'));
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, sandbox.env, { PWD: sandbox.cwd });
  Module._initPaths(); // NODE_PATH, read at start-up
}

/** What Node took once per process and a run must not share with the zygote or another run. */
function renew() {
  Object.defineProperty(process, 'pid', { value: addon.getpid(), enumerable: true, configurable: true });
  process.execArgv.splice(0); // the zygote's --single-threaded: a run's own Node has no flags
  // Math.random's state is the zygote's: every fork would draw the same numbers.
  const pool = new Float64Array(64);
  const bits = new Uint32Array(2 * pool.length);
  let next = pool.length;
  Math.random = function random() {
    if (next === pool.length) {
      crypto.getRandomValues(bits);
      // 53 random bits a number, as V8's own: [0, 1).
      for (let i = 0; i < pool.length; i++)
        pool[i] = ((bits[2 * i] >>> 5) * 2 ** 26 + (bits[2 * i + 1] >>> 6)) / 2 ** 53;
      next = 0;
    }
    return pool[next++];
  };
  // The clocks a program reads from its own start: from the fork, not the zygote's start.
  const now = performance.now.bind(performance);
  const origin = performance.timeOrigin + forkedAt;
  Object.defineProperty(performance, 'now', {
    value: () => now() - forkedAt,
    configurable: true,
    writable: true,
  });
  Object.defineProperty(performance, 'timeOrigin', { value: origin, configurable: true, enumerable: true });
  const uptime = process.uptime;
  process.uptime = () => uptime() - forkedAt / 1000;
}

await import('./warm_node.mjs');
