// The SandboxedProcess of a container engine's CLI (`run`, or `exec` in a persistent container):
// its exit with the limit the wrapper noted, its signals and its release.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { metering, quietly, readSmallFile } from '../../util/index.js';
import type { Lease } from '../host/index.js';
import { findOnPath, ignoreStreamErrors, SAMPLE_MS } from '../host/index.js';
import type { Exit, LimitKind, SandboxedProcess, SandboxSpec } from '../types.js';
import type { ControlListener } from './control.js';
import { ContainerCpu } from './cpu.js';
import type { ContainerEngine } from './engine.js';
import { limitHit } from './limits.js';
import { containerMemoryMb } from './memory.js';
import { removeArgv } from './reaper.js';

const run = promisify(execFile);
/** How often a container that the engine has not created yet is asked to go again. */
const REMOVE_RETRY_MS = 100;
/** After this long an engine CLI that does not end is killed (the reaper still has the name). */
const REMOVE_GIVE_UP_MS = 30_000;

/** How a started engine CLI is stopped and cleaned up; the rest is the same for `run` and `exec`. */
export interface Handle {
  readonly child: ChildProcess;
  readonly control: ControlListener | undefined;
  /** A container of its own (`run`), not a command in a persistent one (`exec`). */
  readonly ownContainer?: boolean;
  /** Host path of the wrapper's OOM note. */
  readonly limitNote: string;
  readonly insidePath: (path: string) => string;
  signal(signal: NodeJS.Signals): void;
  /** The host pid of the container's first process (engine inspect), where it has one. */
  hostPid?(): Promise<number | undefined>;
  /** Its program's processes end with it: the container then waits, stopped (container_init.sh). */
  readonly lingers?: boolean;
  /** After the CLI has exited or been told to stop: remove what is left. */
  cleanUp(cliExited: () => boolean): Promise<void>;
}

/** The SandboxedProcess of an engine CLI: exit, OOM note, signals, and release. */
export function wrap(handle: Handle, lease: Lease | undefined): SandboxedProcess {
  const { child, control } = handle;
  ignoreStreamErrors(child);
  let killedByUs = false;
  let cliExited = false;
  const cgroups = cgroupsOf(handle);
  const limits = new LimitWatch(cgroups, handle.limitNote);
  // Sampled only under a meter (CODEXEC_QUOTAS' cpu_seconds_per_day): a run without one pays nothing.
  // A warm driver's or a session's container is there until the server removes it: read at the end.
  const fresh = !!handle.ownContainer && !control;
  const host = hostCgroups(handle);
  host(); // under a meter (a session started by a principal with a CPU budget), asked at once
  const cpu = new ContainerCpu(() => host() ?? cgroups(), fresh, fresh && metering(), SAMPLE_MS);
  const exited = new Promise<Exit>((resolve) => {
    child.once('error', (error) => {
      cliExited = true;
      cpu.end();
      control?.close();
      resolve({ code: null, signal: null, spawnError: error });
    });
    child.once('exit', (code, signal) => {
      cliExited = true;
      cpu.end();
      control?.close();
      // Read before the artifacts are. A SIGKILL of ours is no memory limit, whatever the counters say.
      const limit = limits.atExit();
      const ours = killedByUs && limit === 'memory';
      resolve({ code, signal, ...(limit && !ours && { limit }) });
    });
  });
  const { stdout, stderr } = child;
  if (!stdout || !stderr) throw new Error('spawn returned no output pipes');
  let disposed: Promise<void> | undefined;
  return {
    pid: child.pid,
    stdout,
    stderr,
    stdin: child.stdin,
    control: control?.channel ?? null,
    exited,
    insidePath: handle.insidePath,
    relaysOutput: true,
    ...(handle.hostPid && { processRoot: handle.hostPid }),
    limitHit: () => limits.counted(),
    // A warm driver's container, for the pool's budget (its cgroups are known once it connected).
    ...(control && { memoryMb: () => containerMemoryMb(child.pid, control.cgroups()) }),
    cpuUsec: () => cpu.read(),
    // A warm driver reports its program's end; its processes end at once without the server
    // (the wrapper kills them all as the driver exits): nothing to stop, no engine call.
    ...(handle.lingers && { stop() {} }),
    kill(signal) {
      if (cliExited) return;
      limits.atStop();
      cpu.read();
      if (signal === 'SIGKILL') killedByUs = true;
      handle.signal(signal);
    },
    dispose() {
      disposed ??= (async () => {
        cpu.end();
        control?.close();
        await handle.cleanUp(() => cliExited);
        await lease?.giveBack();
      })();
      return disposed;
    },
  };
}

/**
 * Which cgroup limit stopped a container's program: its counters on the host while they can be
 * read, and the note its wrapper leaves as it exits (in the workspace: the program may write one
 * too, naming a limit against itself).
 */
class LimitWatch {
  /**
   * A limit the counters showed when the server stopped the container (the note may not come), or
   * the note read while its cgroups were going.
   */
  private seen: LimitKind | undefined;

  constructor(
    private readonly cgroups: () => string | undefined,
    private readonly note: string,
  ) {}

  /**
   * The limit the counters show. One that cannot be read may be one the runtime has removed: every
   * process of the container has ended then, the wrapper last, and the note it left is the answer
   * (a loaded server can read a warm driver's report that late). Read, not taken: the wrapper may
   * still be writing it while the container is there.
   */
  counted(): LimitKind | undefined {
    const hit = limitHit(this.cgroups());
    if (hit !== null) return hit;
    this.seen ??= readNote(this.note);
    return this.seen;
  }

  /**
   * Before the server signals the container, while it is there: a wrapper killed before it could
   * write its note (a timeout's SIGKILL under a fork bomb) says nothing.
   */
  atStop(): void {
    this.seen ??= this.counted();
  }

  /** The engine's CLI exited: the note (taken), else what was seen before. */
  atExit(): LimitKind | undefined {
    const limit = takeNote(this.note) ?? this.seen;
    quietly(() => unlinkSync(`${this.note}.cgroup`));
    return limit;
  }
}

/**
 * Spawn `argv` now, but let it run only once `started` resolves: a host shell holds it until the
 * server writes "go" on its fd 3 (or the reason it cannot start, which the shell prints and exits
 * 125 on, as an engine does when it cannot run a container).
 */
export function spawnWhenStarted(
  started: Promise<void>,
  argv: string[],
  stdin: SandboxSpec['stdin'],
): ChildProcess {
  const gate =
    'IFS= read -r word <&3; exec 3<&-; [ "$word" = go ] && exec "$@"; printf "codexec: %s\\n" "$word" >&2; exit 125';
  const child = spawn(findOnPath('bash') ?? '/bin/bash', ['-c', gate, 'gate', ...argv], {
    stdio: [stdin, 'pipe', 'pipe', 'pipe'],
  });
  const gateIn = child.stdio[3] as Writable;
  gateIn.on('error', () => {});
  started.then(
    () => gateIn.end('go\n'),
    (error: Error) => gateIn.end(`${error.message.replaceAll('\n', ' ')}\n`),
  );
  return child;
}

/** Remove a container whose engine CLI still runs: asked again until the CLI is gone. */
export async function removeContainer(
  engine: ContainerEngine,
  name: string,
  child: ChildProcess,
  cliExited: () => boolean,
): Promise<void> {
  const [binary = engine.binary, ...args] = removeArgv(engine);
  const gone = new Promise((resolve) => {
    if (cliExited()) resolve(undefined);
    else child.once('exit', resolve);
  });
  for (let tries = 0; !cliExited(); tries++) {
    if (tries * REMOVE_RETRY_MS >= REMOVE_GIVE_UP_MS) {
      child.kill('SIGKILL');
      break;
    }
    await run(binary, [...args, name]).catch(() => {});
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, REMOVE_RETRY_MS))]);
  }
}

/**
 * The container's cgroups as the host names them (/proc/<pid>/cgroup of its first process, found
 * by an engine call): asked when first wanted under a meter, again until the container is there.
 * gVisor shows its programs no host cgroup, and the host's word is not the program's (which may
 * write the note).
 */
function hostCgroups(handle: Handle): () => string | undefined {
  let header: string | undefined;
  let asked = false;
  return () => {
    if (!asked && handle.hostPid && metering()) {
      asked = true;
      void handle.hostPid().then((pid) => {
        header = pid ? readCgroups(`/proc/${pid}/cgroup`)?.split('\n').join(';') : undefined;
        asked = header !== undefined; // not created yet: asked again at the next reading
      });
    }
    return header;
  };
}

/**
 * The container's cgroups: from its driver's channel (a warm run) or the wrapper's file, kept
 * once read (the file lies in the workspace, which the program may write).
 */
function cgroupsOf(handle: Pick<Handle, 'control' | 'limitNote'>): () => string | undefined {
  let noted: string | undefined;
  return () => {
    if (handle.control) return handle.control.cgroups();
    noted ??= readCgroups(`${handle.limitNote}.cgroup`);
    return noted;
  };
}

/** /proc/<pid>/cgroup, or the wrapper's copy of it: tens of lines at most. */
const CGROUP_BYTES = 64 * 1024;

/**
 * The code may have put anything at the wrapper's note names (a fifo, a link to a host file or to
 * /dev/zero): only a small regular file there is read, and never waited on.
 */
function readCgroups(path: string): string | undefined {
  return readSmallFile(path, CGROUP_BYTES)?.trim() || undefined;
}

/** The limit a wrapper's note names, if there is one. */
function readNote(path: string): LimitKind | undefined {
  const said = readSmallFile(path, 16)?.trim();
  return said === 'memory' || said === 'processes' ? said : undefined;
}

/** The limit a wrapper's note names (the note is gone then), if there is one. */
function takeNote(path: string): LimitKind | undefined {
  const said = readNote(path);
  quietly(() => unlinkSync(path));
  return said;
}
