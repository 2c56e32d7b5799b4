import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { childStdio, ignoreStreamErrors, processGroupReaper } from '../host/index.js';
import {
  type Availability,
  type Capabilities,
  type Exit,
  NotForkableError,
  type SandboxBackend,
  type SandboxedProcess,
  type SandboxSpec,
} from '../types.js';

/**
 * The seed's light mode: a plain child process in its own session and process group, with the
 * stripped environment. It does not confine the filesystem, network or resources. Its groups are
 * killed if the server dies (the reaper).
 */
export class SubprocessBackend implements SandboxBackend {
  readonly mode = 'subprocess' as const;
  readonly capabilities: Capabilities = {
    ownHome: false,
    egress: 'none',
    processesOutlive: true,
    terminal: 'own',
    signalsGroup: true,
    ownInterpreters: false,
  };
  private readonly reaper = processGroupReaper();

  async probe(): Promise<Availability> {
    return { available: true };
  }

  spawn(spec: SandboxSpec): SandboxedProcess {
    const [command, ...args] = spec.argv;
    if (command === undefined) throw new TypeError('SandboxSpec.argv is empty');
    if (spec.zygote === 'only') throw new NotForkableError();
    const child = spawn(command, args, {
      cwd: spec.cwd,
      env: { ...spec.env },
      // A new session makes the child a process-group leader, so the whole group can be signalled.
      detached: true,
      // The server's own inherited fds reach the code as /dev/null only, as in the namespace backend.
      stdio: childStdio(spec.control ? [spec.stdin, 'pipe', 'pipe', 'pipe'] : [spec.stdin, 'pipe', 'pipe']),
    });
    ignoreStreamErrors(child);
    const pid = child.pid;
    if (pid !== undefined) this.reaper.watch(pid);
    const exited = new Promise<Exit>((resolve) => {
      child.once('error', (error) => resolve({ code: null, signal: null, spawnError: error }));
      child.once('exit', (code, signal) => {
        if (pid !== undefined) this.reaper.release(pid);
        resolve({ code, signal });
      });
    });
    const { stdout, stderr } = child;
    if (!stdout || !stderr) throw new Error('spawn returned no output pipes');
    return {
      pid,
      stdout,
      stderr,
      stdin: child.stdin,
      control: spec.control ? (child.stdio[3] as Duplex) : null,
      exited,
      kill(signal) {
        if (pid === undefined) return;
        try {
          process.kill(-pid, signal);
        } catch {
          // ESRCH: the group is already gone
        }
      },
      memoryMb() {
        // The leader alone: a warm driver waiting for its job has no children.
        if (pid === undefined) return undefined;
        try {
          const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
          return kb === undefined ? undefined : Number(kb) / 1024;
        } catch {
          return undefined;
        }
      },
      async dispose() {},
    };
  }
}
