// The forker process (see forker.ts): a small Node process that does the server's spawning.
// fork() copies the page tables of the whole calling process, so spawning from the ~100 MB server
// costs several ms of blocked event loop (a worker thread would not help: same process); from
// this process it costs a fraction of that. It also creates run cgroups, which blocks in the kernel.
//
// Each pipe slot of the child is a Unix stream socket (what Node's own stdio pipes are) connected
// to the main thread's listener. The worker writes the job's token and the slot number on it first,
// so the main thread knows which run and fd it is, then hands it to the child and closes its copy.
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { childStdio } from '../fds.js';
import { ignoreStreamErrors } from '../streams.js';
import { type CgroupLayout, type CgroupLimits, createRunCgroup, type RunCgroup } from './cgroups.js';

export interface SpawnJob {
  readonly type: 'spawn';
  readonly id: number;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  readonly stdio: ReadonlyArray<'pipe' | 'ignore'>;
  /** The main thread's listener, and the job's token to send first on each pipe slot. */
  readonly address: string;
  readonly token: string;
  /** Create a run cgroup and move the child in before reporting it ready. */
  readonly cgroup?: { readonly layout: CgroupLayout; readonly limits: CgroupLimits };
}

export type WorkerReport =
  | { readonly type: 'ready'; readonly id: number; readonly pid: number; readonly cgroupDirs?: string[] }
  | { readonly type: 'failed'; readonly id: number; readonly pid?: number; readonly message: string }
  | {
      readonly type: 'exit';
      readonly id: number;
      readonly code: number | null;
      readonly signal: string | null;
    };

export const HEADER_BYTES = 36;

/** The first bytes on every slot: 32 hex chars of token, the slot number in 4 digits. */
export const header = (token: string, slot: number) => `${token}${String(slot).padStart(4, '0')}`;

function connected(address: string, first: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(address);
    // Never read here: whatever the main thread writes is for the child.
    socket.pause();
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(first, (error) => (error ? reject(error) : resolve(socket)));
    });
  });
}

/**
 * The child shares the socket's file description, and libuv made it non-blocking: bash's read of
 * its argv and bwrap's of the seccomp program would fail with EAGAIN. Node's spawn makes the
 * child's end of its own pipes blocking; the handle's setBlocking (not in Node's typings) does
 * the same here. Without it the job fails and the server spawns the launcher itself.
 */
function blocking(socket: Socket): void {
  const handle = (socket as unknown as { _handle?: { setBlocking?: (on: boolean) => number } })._handle;
  if (typeof handle?.setBlocking !== 'function' || handle.setBlocking(true) !== 0) {
    throw new Error('cannot make a socket blocking for the child');
  }
}

async function run(job: SpawnJob, post: (report: WorkerReport) => void): Promise<void> {
  let cgroup: RunCgroup | undefined;
  const sockets: Socket[] = [];
  let pid: number | undefined;
  try {
    if (job.cgroup) cgroup = createRunCgroup(job.cgroup.layout, job.cgroup.limits);
    const stdio = await Promise.all(
      childStdio(job.stdio).map(async (slot, index) => {
        if (slot !== 'pipe') return slot;
        const socket = await connected(job.address, header(job.token, index));
        sockets.push(socket);
        return socket;
      }),
    );
    for (const socket of sockets) blocking(socket);
    const child = spawn(job.command, [...job.args], { cwd: '/', env: job.env, detached: true, stdio });
    ignoreStreamErrors(child);
    const failed = new Promise<never>((_, reject) => child.once('error', reject));
    failed.catch(() => {}); // an error after start-up shows as the exit
    pid = child.pid;
    if (pid === undefined) await failed;
    child.once('exit', (code, signal) => post({ type: 'exit', id: job.id, code, signal }));
    for (const socket of sockets) socket.destroy(); // the child has its own copies now
    if (cgroup && pid !== undefined) await Promise.race([cgroup.join(pid), failed]);
    post({ type: 'ready', id: job.id, pid: pid as number, ...(cgroup && { cgroupDirs: [...cgroup.dirs] }) });
  } catch (error) {
    for (const socket of sockets) socket.destroy();
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await cgroup?.remove(1000);
    post({
      type: 'failed',
      id: job.id,
      ...(pid !== undefined && { pid }),
      message: (error as Error).message,
    });
  }
}

if (process.send) {
  process.on('message', (job: SpawnJob) => {
    void run(job, (report) => process.send?.(report));
  });
  // The server is gone: so is every reason to exist (sandboxes die with us: --die-with-parent).
  process.on('disconnect', () => process.exit(0));
}
