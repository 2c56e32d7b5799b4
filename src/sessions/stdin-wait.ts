// Whether a session's code is blocked reading its input, seen from /proc: a thread of the
// session's process tree asleep in a read (or a poll/select/epoll wait) on the session's stdin,
// or in a pty session on a terminal (the sandbox's devpts has only its own). No guess from the output: the kernel says where it sleeps.
import { open, readdir, readFile, stat } from 'node:fs/promises';

/** System call numbers by architecture: reads of one fd, and waits on many. */
interface Calls {
  readonly reads: ReadonlySet<number>;
  readonly poll: ReadonlySet<number>;
  readonly select: ReadonlySet<number>;
  readonly epoll: ReadonlySet<number>;
}

const CALLS: Partial<Record<NodeJS.Architecture, Calls>> = {
  // read, pread64, readv, recvfrom, recvmsg, preadv, preadv2 | poll, ppoll | select, pselect6 |
  // epoll_wait, epoll_pwait, epoll_pwait2
  x64: {
    reads: new Set([0, 17, 19, 45, 47, 295, 327]),
    poll: new Set([7, 271]),
    select: new Set([23, 270]),
    epoll: new Set([232, 281, 441]),
  },
  // arm64 has no poll, select nor epoll_wait of its own: ppoll, pselect6, epoll_pwait(2).
  arm64: {
    reads: new Set([63, 67, 65, 207, 212, 69, 286]),
    poll: new Set([73]),
    select: new Set([72]),
    epoll: new Set([22, 441]),
  },
};

const POLLIN = 0x1;
const EPOLLIN = 0x1;
/** Unix98 pty slaves: majors 136–143. */
const isPtySlave = (rdev: number) => {
  const major = (rdev >> 8) & 0xfff;
  return major >= 136 && major <= 143;
};

/**
 * Looks, on demand, whether any process of a sandbox sleeps waiting for input. `root` is the
 * sandbox's first process on this host (bubblewrap, the driver itself, a container's first
 * process); its fd 0 is the session's stdin. Anything /proc does not let us read (another architecture, a process gone
 * meanwhile, no right to look) counts as not waiting: the send then runs to its timeout as before.
 */
export class InputWatch {
  private input: string | undefined;
  private root: Promise<number | undefined> | undefined;
  private readonly calls = CALLS[process.arch];

  /**
   * `findRoot`: asked once, at the first look (a container's costs an engine call). `terminal`: a
   * pty session's, whose input is its terminal (the relay in front of it always waits on the
   * session's stdin: that is no wait of the code's).
   */
  constructor(
    private readonly findRoot: () => Promise<number | undefined>,
    private readonly terminal = false,
  ) {}

  async waiting(): Promise<boolean> {
    if (!this.calls) return false;
    this.root ??= this.findRoot();
    const root = await this.root;
    if (root === undefined || root <= 0) return false;
    try {
      this.input ??= identity(await stat(`/proc/${root}/fd/0`));
    } catch {
      return false;
    }
    for (const pid of await descendants(root)) {
      for (const tid of await list(`/proc/${pid}/task`)) {
        if (await this.threadWaits(pid, tid)) return true;
      }
    }
    return false;
  }

  private async threadWaits(pid: number, tid: string): Promise<boolean> {
    const calls = this.calls as Calls;
    const syscall = await text(`/proc/${pid}/task/${tid}/syscall`);
    // "<nr> <arg0> … <arg5> <sp> <pc>"; "running" or "-1 …" when not in a call.
    const fields = syscall?.trim().split(' ');
    if (!fields || fields.length < 7) return false;
    const nr = Number(fields[0]);
    const [a0, a1] = fields.slice(1, 3).map((field) => Number.parseInt(field, 16));
    if (calls.reads.has(nr)) return this.isInput(pid, a0 as number);
    if (calls.epoll.has(nr)) return this.epollWatchesInput(pid, a0 as number);
    if (calls.poll.has(nr)) return this.pollWatchesInput(pid, a0 as number, a1 as number);
    if (calls.select.has(nr)) return this.selectWatchesInput(pid, a0 as number, a1 as number);
    return false;
  }

  /** Whether the process's `fd` is the session's input: its stdin, or (pty) a terminal. */
  private async isInput(pid: number, fd: number): Promise<boolean> {
    try {
      const target = await stat(`/proc/${pid}/fd/${fd}`);
      if (this.terminal) return target.isCharacterDevice() && isPtySlave(target.rdev);
      return identity(target) === this.input;
    } catch {
      return false;
    }
  }

  /** An epoll set waiting for the input to be readable ("tfd: N events: HEX" per watched fd). */
  private async epollWatchesInput(pid: number, epfd: number): Promise<boolean> {
    const info = await text(`/proc/${pid}/fdinfo/${epfd}`);
    for (const match of info?.matchAll(/^tfd:\s+(\d+)\s+events:\s+([0-9a-f]+)/gm) ?? []) {
      if (Number.parseInt(match[2] as string, 16) & EPOLLIN && (await this.isInput(pid, Number(match[1]))))
        return true;
    }
    return false;
  }

  /** poll(fds, nfds): struct pollfd { int fd; short events; short revents; } each. */
  private async pollWatchesInput(pid: number, address: number, count: number): Promise<boolean> {
    const bytes = await memory(pid, address, Math.min(count, 1024) * 8);
    for (let at = 0; bytes && at + 8 <= bytes.length; at += 8) {
      if (bytes.readInt16LE(at + 4) & POLLIN && (await this.isInput(pid, bytes.readInt32LE(at)))) return true;
    }
    return false;
  }

  /** select(nfds, readfds, …): a bit per fd below nfds in the read set. */
  private async selectWatchesInput(pid: number, count: number, readSet: number): Promise<boolean> {
    if (readSet === 0) return false;
    const bytes = await memory(pid, readSet, Math.ceil(Math.min(count, 1024) / 8));
    for (let fd = 0; bytes && fd < Math.min(count, bytes.length * 8); fd++) {
      if ((bytes[fd >> 3] as number) & (1 << (fd & 7)) && (await this.isInput(pid, fd))) return true;
    }
    return false;
  }
}

function identity(stats: { dev: number; ino: number }): string {
  return `${stats.dev}:${stats.ino}`;
}

async function text(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function list(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch {
    return [];
  }
}

/** `root` and every process below it (each thread's children, as /proc lists them). */
async function descendants(root: number): Promise<number[]> {
  const found = [root];
  for (let i = 0; i < found.length && found.length < 4096; i++) {
    const pid = found[i] as number;
    for (const tid of await list(`/proc/${pid}/task`)) {
      const children = await text(`/proc/${pid}/task/${tid}/children`);
      for (const child of children?.split(' ') ?? []) if (child.trim()) found.push(Number(child));
    }
  }
  return found;
}

/** `length` bytes of a process's memory at `address` (root, or the owner of its user namespace). */
async function memory(pid: number, address: number, length: number): Promise<Buffer | undefined> {
  if (length <= 0 || address <= 0) return undefined;
  let file: Awaited<ReturnType<typeof open>> | undefined;
  try {
    file = await open(`/proc/${pid}/mem`, 'r');
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await file.read(buffer, 0, length, address);
    return buffer.subarray(0, bytesRead);
  } catch {
    return undefined;
  } finally {
    await file?.close();
  }
}

/** The prompt a program waits at: the last line of its output (what follows the last newline). */
export function promptOf(output: string): string {
  const text = output.endsWith('\n') ? output.slice(0, -1) : output;
  const line = text.slice(text.lastIndexOf('\n') + 1).replace(/\r$/, '');
  return line.length > 500 ? line.slice(-500) : line;
}

/** How long output must have been quiet before /proc is asked whether the code waits for input. */
const QUIET_MS = 100;
/** How often it is asked then (every LOOK_MS, LONG_LOOK_MS once the send has run LONG_SEND_MS). */
const LOOK_MS = 150;
const LONG_LOOK_MS = 500;
const LONG_SEND_MS = 3000;
export const WAITING = Symbol('waiting for input');

/**
 * Resolves when the code is seen blocked reading input: looked at in /proc once output has been
 * quiet a moment (`lastOutputAt`), and again a moment later (a read about to be fed does not
 * count). A send that ends sooner never looks; a stopped one (timeout, cancel) no longer does.
 */
export function watchInput(
  watch: InputWatch,
  started: number,
  lastOutputAt: () => number,
  stopped: () => boolean,
): { waiting: Promise<typeof WAITING>; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  const quiet = () => !over && !stopped() && Date.now() - lastOutputAt() >= QUIET_MS;
  const waiting = new Promise<typeof WAITING>((resolve) => {
    const look = async () => {
      if (quiet() && (await watch.waiting())) {
        await new Promise((wait) => setTimeout(wait, QUIET_MS));
        if (quiet() && (await watch.waiting())) return resolve(WAITING);
      }
      if (!over) timer = setTimeout(look, Date.now() - started < LONG_SEND_MS ? LOOK_MS : LONG_LOOK_MS);
    };
    timer = setTimeout(look, LOOK_MS);
  });
  return {
    waiting,
    stop: () => {
      over = true;
      clearTimeout(timer);
    },
  };
}
