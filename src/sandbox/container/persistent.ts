// execute_command's persistent containers (MassGen's model): one per key (a principal), started on
// its first command with the command workspace mounted, used by `exec` for each command after, and
// removed after an idle while, at shutdown, or with the server (its stdin closes).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { DRIVERS } from '../host/index.js';
import type { SandboxSpec } from '../types.js';
import { buildPersistentArgs, type ContainerRun, DRIVERS_INSIDE, type Mount, WORKSPACE } from './args.js';
import type { ContainerEngine } from './engine.js';
import { engineCwd } from './engine-cwd.js';
import { runtimeArgs } from './runtime.js';

/** A persistent container unused this long is removed (the next command starts another). */
const IDLE_MS = 10 * 60_000;
/** How long a persistent container may take to start. */
const START_MS = 60_000;

export interface Persistent {
  readonly name: string;
  readonly mounts: readonly Mount[];
}

interface Kept extends Persistent {
  readonly child: ChildProcess;
  readonly started: Promise<void>;
  /** Commands running in it now (no idle removal meanwhile). */
  users: number;
  timer?: NodeJS.Timeout;
}

export class PersistentContainers {
  private readonly kept = new Map<string, Kept>();

  constructor(
    private readonly engine: ContainerEngine,
    /** Everything `run` needs but the name (the backend's labels, user, limits, image). */
    private readonly runFor: (name: string) => ContainerRun,
    private readonly onStart: (name: string) => void,
    private readonly onEnd: (name: string) => void,
  ) {}

  /**
   * The container of `key`, started now if there is none (named `name`, `dirs` mounted, the first
   * at /workspace, and the operator's mounts of the spec); `started` settles once it runs.
   * `release()` when the command is over.
   */
  acquire(
    key: string,
    dirs: readonly string[],
    name: string,
    spec: Pick<SandboxSpec, 'limits' | 'mounts'>,
  ): Persistent & { started: Promise<void> } {
    const { limits } = spec;
    const mounts: Mount[] = dirs
      .filter((dir, i) => i === 0 || existsSync(dir))
      .map((dir, i) => ({ host: dir, inside: i === 0 ? WORKSPACE : dir, writable: true }));
    // The wrapper every command runs under.
    mounts.push({ host: DRIVERS, inside: DRIVERS_INSIDE, writable: false });
    for (const mount of spec.mounts ?? [])
      mounts.push({ host: mount.path, inside: mount.target, writable: false });
    let kept = this.kept.get(key);
    if (kept && JSON.stringify(kept.mounts) !== JSON.stringify(mounts)) {
      void this.end(key, kept);
      kept = undefined;
    }
    kept ??= this.start(key, mounts, name, limits);
    clearTimeout(kept.timer);
    kept.users++;
    return kept;
  }

  release(key: string): void {
    const kept = this.kept.get(key);
    if (!kept) return;
    kept.users = Math.max(0, kept.users - 1);
    if (kept.users > 0) return;
    kept.timer = setTimeout(() => this.end(key, kept), IDLE_MS);
    kept.timer.unref();
  }

  /** End them all (shutdown); the engine removes each (--rm) once its stdin closes. */
  async closeAll(): Promise<void> {
    const ending = [...this.kept].map(([key, kept]) => this.end(key, kept));
    await Promise.allSettled(ending);
  }

  private start(key: string, mounts: Mount[], name: string, limits: SandboxSpec['limits']): Kept {
    const run = this.runFor(name);
    const before = runtimeArgs(this.engine, run.network).before;
    const child = spawn(
      this.engine.binary,
      [...this.engine.global, ...before, ...buildPersistentArgs(mounts, run, limits)],
      { stdio: ['pipe', 'pipe', 'pipe'], cwd: engineCwd() },
    );
    this.onStart(name);
    child.stdin?.on('error', () => {});
    let said = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      said = (said + chunk.toString()).slice(-2000);
    });
    const started = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('the persistent container did not start in time')),
        START_MS,
      );
      child.stdout?.once('data', () => {
        clearTimeout(timer);
        resolve();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the persistent container ended (exit ${code}): ${said.trim()}`));
      });
      child.once('error', reject);
    });
    started.catch(() => {});
    const kept: Kept = { name, mounts, child, started, users: 0 };
    child.once('exit', () => {
      if (this.kept.get(key) === kept) this.kept.delete(key);
      this.onEnd(name);
    });
    this.kept.set(key, kept);
    return kept;
  }

  private async end(key: string, kept: Kept): Promise<void> {
    clearTimeout(kept.timer);
    if (this.kept.get(key) === kept) this.kept.delete(key);
    if (kept.child.exitCode !== null || kept.child.signalCode !== null) return;
    kept.child.stdin?.end();
    await once(kept.child, 'exit');
  }
}
