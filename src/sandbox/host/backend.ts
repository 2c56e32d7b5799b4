// What the namespace and landlock backends share: the host's facts, run cgroups, pre-started
// launchers, zygotes that fork warm drivers, and the life of a started run. Each backend is a
// subclass that confines its runs its own way (bwrap, or Landlock through codexec's launcher) in
// spawnWith() and reserveFork(), built from the stages here.
import { SandboxUnavailableError } from '../../errors/index.js';
import { log, settledWithin } from '../../util/index.js';
import type { Availability, Capabilities, SandboxBackend, SandboxedProcess, SandboxSpec } from '../types.js';
import { NotForkableError } from '../types.js';
import type { CgroupTotals } from './cgroup-parent.js';
import type { CgroupLimits, RunCgroup } from './cgroups.js';
import { type ChildLike, Forker } from './forker.js';
import { LAUNCHER_IDLE_MS, Launchers, type Ready, type Shape } from './launcher.js';
import { LiveCgroups } from './live.js';
import { type Identity, Lease } from './ownership.js';
import { probeRun } from './probe.js';
import { killOrphanedSandboxes } from './process.js';
import { type Prepared, type Run, releaseRun, wrapRun } from './run.js';
import { type FilterOptions, hostFilter, socketPolicy } from './seccomp.js';
import { detectHost, type HostSetup, type Layer } from './setup.js';
import { NEST, NODE_FORKS, type Zygote } from './zygote.js';
import { Zygotes } from './zygotes.js';

export interface HostOptions {
  /** false: never use cgroups (rlimit fallbacks only) — for measuring what they cost. */
  readonly cgroups?: boolean;
  /** false: bash launchers spawned by the server even where a host python3 could fork them. */
  readonly forker?: boolean;
  /** false: warm Python drivers start as interpreters, never forked from a zygote. */
  readonly zygote?: boolean;
  /** Pre-started launchers are let go after this long without a run (CODEXEC_POOL_IDLE_MS). */
  readonly idleMs?: number;
  /** Memory and processes of all runs together (CODEXEC_TOTAL_*): the runs' parent cgroup. */
  readonly totals?: CgroupTotals;
}

/**
 * A forked run's cgroup holds its own processes only; a cold run's holds bwrap and the sandbox's
 * pid 1 too. pids.max is lowered by these for a forked run, to allow its code what a cold run's gets.
 */
export const OUTSIDE_FORKED_CGROUP = 2;

/** What a fork's run was given before it was forked (forkParts). */
export type ForkParts = Pick<Prepared, 'lease' | 'tmp'> & { readonly cgroup: RunCgroup };

export abstract class HostBackend<Options extends HostOptions = HostOptions> implements SandboxBackend {
  abstract readonly mode: 'namespace' | 'landlock';
  abstract readonly capabilities: Capabilities;

  private host: HostSetup | undefined;
  private probed: Promise<Availability> | undefined;
  /** Run cgroups not yet removed: on exit the server kills their members and removes what it can. */
  private readonly cgroups = new LiveCgroups();
  private launcherPool: Launchers | undefined;
  private readonly zygotes: Zygotes;
  /** Launchers set aside by reserveLauncher() for the spawn() of that very spec, with their shape. */
  private readonly heldLaunchers = new WeakMap<
    SandboxSpec,
    { readonly ready: Ready; readonly shape: string }
  >();
  /** Runs forked by reserveFork() for the spawn() of that very spec. */
  private readonly reserved = new WeakMap<SandboxSpec, Prepared & { readonly child: ChildLike }>();

  constructor(protected readonly options: Options) {
    this.zygotes = new Zygotes(options.idleMs ?? LAUNCHER_IDLE_MS);
  }

  /** The options it was made with (a backend of another mode with the same settings takes them). */
  get settings(): Options {
    return this.options;
  }

  /** Why no run can start here at all, or undefined (the probe then runs one). */
  protected abstract unavailable(host: HostSetup): string | undefined;

  /** Start `spec`'s run, with the launcher reserveLauncher() set aside for a run of `shape`, if any. */
  protected abstract spawnWith(
    spec: SandboxSpec,
    held: (shape: Shape) => Ready | undefined,
  ): SandboxedProcess;

  /** The stdio shape of `spec`'s run as spawn() will start it; undefined: no launcher can start it. */
  protected abstract launchShape(spec: SandboxSpec, host: HostSetup): Shape | undefined;

  abstract reserveFork(spec: SandboxSpec, ms: number): Promise<void>;

  /** Host facts, detected on first use (never at construction: the server must start instantly). */
  setup(): HostSetup {
    if (!this.host) {
      this.host = detectHost({
        cgroups: this.options.cgroups ?? true,
        ...(this.options.totals && { totals: this.options.totals }),
      });
      // What servers before this one left of sandboxes they were building when they died.
      const orphans = killOrphanedSandboxes();
      if (orphans > 0) log('info', `killed ${orphans} orphaned sandbox(es) left by a stopped server`);
    }
    return this.host;
  }

  layers(): readonly Layer[] {
    return this.setup().layers;
  }

  /** Detect the layers, then run `true` in a real sandbox: only a run proves it works. */
  probe(): Promise<Availability> {
    this.probed ??= (async () => {
      const missing = this.unavailable(this.setup());
      if (missing) return { available: false, reason: missing };
      await this.prepare(this.setup());
      return probeRun(this, this.setup().root);
    })();
    return this.probed;
  }

  /** What runs need made once, before the first (the probe's): nothing, but where a backend says. */
  protected async prepare(_host: HostSetup): Promise<void> {}

  forksDrivers(interpreter: 'python' | 'node' | 'bash' = 'python'): boolean {
    const host = this.setup();
    const enabled = this.options.zygote !== false && this.options.forker !== false;
    if (!enabled || !host.root || host.cgroups === undefined) return false;
    if (interpreter === 'python') return true;
    // Node's zygote is a Python's with a Node template: namespace sandboxes only, the addon built.
    // Bash's driver is exec'd by a fork of the host's Python, where the nest makes its sandbox:
    // bwrap and a placeholder would cost what bwrap and the drop program do.
    const built = interpreter === 'node' ? NODE_FORKS : NEST !== undefined;
    return this.mode === 'namespace' && built && host.python !== undefined;
  }

  spawn(spec: SandboxSpec): SandboxedProcess {
    // A launcher set aside for this spec is used, or let go if the run cannot start after all.
    const held = this.heldLaunchers.get(spec);
    this.heldLaunchers.delete(spec);
    let used = false;
    try {
      return this.spawnWith(spec, (shape) => {
        used = held?.shape === JSON.stringify(shape);
        return used ? held?.ready : undefined;
      });
    } finally {
      if (held && !used) held.ready.discard();
    }
  }

  /**
   * Under load every ready launcher can be taken, and spawn() would then fork the whole server for
   * a direct start: wait (at most `ms`) for the next one the forker makes and set it aside for
   * spawn(spec), this very object.
   */
  async reserveLauncher(spec: SandboxSpec, ms: number): Promise<void> {
    const host = this.setup();
    if (!host.cgroups || spec.zygote || this.heldLaunchers.has(spec)) return;
    const shape = this.launchShape(spec, host);
    if (!shape) return;
    const ready = await this.launchers(host)?.takeWithin(shape, ms);
    if (ready) this.heldLaunchers.set(spec, { ready, shape: JSON.stringify(shape) });
  }

  /** Whether reserveFork() may fork `spec`'s run here: a root server's, with cgroups, not forked yet. */
  protected mayFork(spec: SandboxSpec, host: HostSetup): boolean {
    return host.root && host.cgroups !== undefined && !this.reserved.has(spec);
  }

  /** The zygote that forks `spec`'s warm driver here, if any. */
  protected zygoteFor(spec: SandboxSpec): Zygote | undefined {
    if (!this.forksDrivers()) return undefined;
    const allowed = { node: this.forksDrivers('node'), exec: this.forksDrivers('bash') };
    return this.zygotes.for(spec, this.setup().python, allowed);
  }

  /**
   * A fork's workspace lent and its cgroup (and `tmp()`) made; undefined if they could not be (a
   * cold start reports it).
   */
  protected async forkParts(
    spec: SandboxSpec,
    host: HostSetup,
    identity: Identity,
    tmp?: () => string,
  ): Promise<ForkParts | undefined> {
    const lease = new Lease(identity);
    lease.lend(spec);
    try {
      const maxProcs = Math.max(1, spec.limits.maxProcs - OUTSIDE_FORKED_CGROUP);
      const cgroup = this.newCgroup(host, { ...spec.limits, maxProcs });
      const dir = tmp?.();
      return { cgroup, lease, ...(dir && { tmp: dir }) };
    } catch {
      await lease.giveBack();
      return undefined;
    }
  }

  /**
   * Keep a fork for spawn(spec) if it comes within `ms`. Failed, or too slow: what it forks later
   * goes, and what was made for it. The workspace is given back now, not then: spawn() lends it
   * again to the sandbox it starts instead, and a late give-back took it from that one (its
   * program then could not read its own script).
   */
  protected async keepFork(
    spec: SandboxSpec,
    prepared: Prepared,
    forking: Promise<ChildLike>,
    ms: number,
  ): Promise<void> {
    const child = await settledWithin(
      forking.catch(() => undefined),
      ms,
    );
    if (child) {
      this.reserved.set(spec, { ...prepared, child });
      return;
    }
    await prepared.lease?.giveBack();
    const orphan = { ...prepared, lease: undefined };
    void forking.then(
      (late) => this.wrap(late, orphan).dispose(),
      () => this.release(orphan),
    );
  }

  /** The run reserveFork() forked for `spec`, if any; NotForkableError where it must be one. */
  protected takeFork(spec: SandboxSpec): SandboxedProcess | undefined {
    const reserved = this.reserved.get(spec);
    if (reserved) {
      this.reserved.delete(spec);
      return this.wrap(reserved.child, reserved);
    }
    if (spec.zygote === 'only') throw new NotForkableError();
    return undefined;
  }

  /** The seccomp filter of `spec`'s run, with `options` beyond its network's sockets. */
  protected seccompFor(spec: SandboxSpec, options: Omit<FilterOptions, 'sockets'> = {}): Buffer {
    const seccomp = hostFilter({ sockets: socketPolicy(spec, this.mode === 'namespace'), ...options });
    if (!seccomp)
      throw new SandboxUnavailableError(`${this.mode} sandbox unavailable: no seccomp filter for this arch`);
    return seccomp;
  }

  /** A ready launcher for a run of `shape`: the one set aside for it, or one from the pool. */
  protected launcherFor(
    host: HostSetup,
    shape: Shape,
    held: (shape: Shape) => Ready | undefined,
  ): Ready | undefined {
    return host.cgroups ? (held(shape) ?? this.launchers(host)?.take(shape)) : undefined;
  }

  /**
   * A cold run's cgroup (the launcher's, or a new one where the host has cgroups) and `tmp()`:
   * where they cannot be made, `undo()` and SANDBOX_UNAVAILABLE.
   */
  protected runParts(
    host: HostSetup,
    ready: Ready | undefined,
    limits: CgroupLimits,
    undo: () => void,
    tmp?: () => string,
  ): { readonly cgroup: RunCgroup | undefined; readonly tmp?: string } {
    try {
      const cgroup = ready?.cgroup ?? (host.cgroups ? this.newCgroup(host, limits) : undefined);
      const dir = tmp?.();
      return { cgroup, ...(dir && { tmp: dir }) };
    } catch (error) {
      undo();
      throw new SandboxUnavailableError(`could not create the run's cgroup: ${(error as Error).message}`);
    }
  }

  /** The run of `child` (bwrap, a zygote's fork, a landlock launcher) and what was made for it. */
  protected wrap(child: ChildLike, prepared: Prepared): Run {
    return wrapRun(child, prepared, this.cgroups, this.options.totals);
  }

  protected release(prepared: Prepared): Promise<void> {
    return releaseRun(prepared, this.cgroups);
  }

  private newCgroup(host: HostSetup, limits: CgroupLimits): RunCgroup {
    if (!host.cgroups) throw new Error('no cgroups');
    return this.cgroups.create(host.cgroups, limits);
  }

  private launchers(host: HostSetup): Launchers | undefined {
    if (!host.cgroups || !host.bash) return undefined;
    this.launcherPool ??= new Launchers(
      host.bash,
      (limits) => this.newCgroup(host, limits),
      host.python && this.options.forker !== false ? new Forker(host.python) : undefined,
      { ...(this.options.idleMs !== undefined && { idleMs: this.options.idleMs }) },
    );
    return this.launcherPool;
  }
}

/** A lease of `spec`'s workspaces to `identity` (a root server's runs), lent now. */
export function lendTo(spec: SandboxSpec, identity: Identity | undefined): Lease | undefined {
  const lease = identity ? new Lease(identity) : undefined;
  lease?.lend(spec);
  return lease;
}
