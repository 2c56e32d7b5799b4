import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, open, realpath, stat } from 'node:fs/promises';
import { homedir, userInfo } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxUnavailableError } from '../errors/index.js';
import { isWithin } from '../util/index.js';

export type InterpreterKind = 'python' | 'node' | 'bash';

const run = promisify(execFile);

/**
 * Resolves each interpreter once to an absolute real binary. A pyenv shim costs ~100 ms per
 * start, so a script on PATH is asked for its real executable instead of being run every time.
 */
export class Interpreters {
  private readonly cache = new Map<InterpreterKind, Promise<string>>();

  constructor(
    private readonly overrides: Partial<Record<InterpreterKind, string>>,
    private readonly path: string = process.env.PATH ?? '',
  ) {}

  get(kind: InterpreterKind): Promise<string> {
    let found = this.cache.get(kind);
    if (!found) {
      found = this.resolve(kind);
      // A failure is not cached: the user may install the interpreter and retry.
      found.catch(() => this.cache.delete(kind));
      this.cache.set(kind, found);
    }
    return found;
  }

  private async resolve(kind: InterpreterKind): Promise<string> {
    const override = this.overrides[kind];
    if (override) return realExecutable(override, kind);
    if (kind === 'node') return this.runnableBySandbox(process.execPath, 'node');
    const name = kind === 'python' ? 'python3' : 'bash';
    const onPath = await which(name, this.path);
    if (!onPath) {
      throw new SandboxUnavailableError(
        `${name} was not found on PATH; install it or set CODEXEC_${kind.toUpperCase()}`,
      );
    }
    let real = await realpath(onPath);
    if (kind === 'python' && (await isScript(real))) {
      const { stdout } = await run(real, ['-c', 'import sys; print(sys.executable)'], { timeout: 10_000 });
      real = await realExecutable(stdout.trim(), kind);
    }
    return this.runnableBySandbox(real, name);
  }

  /**
   * A root server runs code as an unprivileged uid (namespace sandbox), which must neither need
   * root's home (a pyenv tree under /root would have to be mounted into every sandbox) nor an
   * interpreter only root may read. Prefer the system one then; installs use the same choice.
   */
  private async runnableBySandbox(found: string, name: string): Promise<string> {
    if (process.getuid?.() !== 0) return found;
    // HOME may be redirected; the passwd entry names the real home too.
    const homes = [homedir(), userInfo().homedir];
    if (!homes.some((home) => isWithin(found, home)) && (await othersCanRun(found))) return found;
    for (const candidate of [`/usr/bin/${name}`, `/usr/local/bin/${name}`, `/bin/${name}`]) {
      const real = await realpath(candidate).catch(() => undefined);
      if (real && (await othersCanRun(real))) return real;
    }
    return found;
  }
}

/** World-executable binary in a world-readable install prefix (what a bind mount exposes). */
async function othersCanRun(binary: string): Promise<boolean> {
  try {
    const prefix = dirname(dirname(binary));
    const [file, dir] = await Promise.all([stat(binary), stat(prefix)]);
    return (file.mode & 0o001) !== 0 && (dir.mode & 0o005) === 0o005;
  } catch {
    return false;
  }
}

async function realExecutable(path: string, kind: InterpreterKind): Promise<string> {
  try {
    const real = await realpath(path);
    await access(real, constants.X_OK);
    return real;
  } catch {
    throw new SandboxUnavailableError(`${kind} interpreter ${path} is not an executable file`);
  }
}

async function which(name: string, path: string): Promise<string | undefined> {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

async function isScript(path: string): Promise<boolean> {
  const file = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer.toString('latin1') === '#!';
  } finally {
    await file.close();
  }
}
