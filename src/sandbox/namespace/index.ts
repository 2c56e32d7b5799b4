// The namespace backend (Linux default): bubblewrap + seccomp + rlimits + cgroups, network off,
// never host root. Builds the command line with buildBwrapArgs() and spawns it here, only here.
// With `confine: 'landlock'` it is sandbox mode landlock: the same runs, each confined by our
// launcher's script (../landlock) instead of bwrap. Over 400 lines: the ways a run starts (zygote
// fork, launcher, direct) and the two confinements share the backend's state (host setup, /etc
// copies, run cgroups, launchers, zygotes); its pieces live in files of their own.
import { rmSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import { SandboxUnavailableError } from '../../errors/index.js';
import { log, settledWithin } from '../../util/index.js';
import { confiner, ownTmp } from '../landlock/index.js';
import { Reach } from '../landlock/reach.js';
import { processGroupReaper } from '../subprocess/reaper.js';
import type {
  Availability,
  BackendMode,
  Capabilities,
  Exit,
  LimitKind,
  SandboxBackend,
  SandboxedProcess,
  SandboxSpec,
} from '../types.js';
import { NotForkableError } from '../types.js';
import type { Watcher } from '../watcher.js';
import {
  type BwrapOptions,
  buildBwrapArgs,
  interpreterMount,
  REPORT_FD,
  reportsEnd,
  rlimitsFor,
  ulimitArgs,
} from './args.js';
import { type CgroupTotals, totalLimitNote } from './cgroup-parent.js';
import { type CgroupLimits, type RunCgroup, RunCgroups } from './cgroups.js';
import { DROP_NAME, dropProgram, dropRuns } from './drop.js';
import { EtcCopies, type EtcLease } from './etc.js';
import { type ChildLike, Forker } from './forker.js';
import { BOUND_ETC, etcEntries, findOnPath, type SystemMount, systemMounts } from './host.js';
import {
  LAUNCHER_IDLE_MS,
  Launchers,
  type Ready,
  type Shape,
  type Started,
  startDirect,
} from './launcher.js';
import { type Identity, identityFor, Lease, lendable, NOBODY } from './ownership.js';
import { descendants, killOrphanedSandboxes, signal } from './process.js';
import { hostFilter, type SocketPolicy } from './seccomp.js';
import { detectHost, type HostSetup, type Layer } from './setup.js';
import { DRIVERS, Zygote, type ZygoteSandbox } from './zygote.js';

export { buildBwrapArgs } from './args.js';
export { findOnPath } from './host.js';
export type { Layer } from './setup.js';

const SIGXCPU = 128 + constants.signals.SIGXCPU;
const SIGXFSZ = 128 + constants.signals.SIGXFSZ;

export interface NamespaceOptions {
  /** false: never use cgroups (rlimit fallbacks only) — for measuring what they cost. */
  readonly cgroups?: boolean;
  /** false: bash launchers spawned by the server even where a host python3 could fork them. */
  readonly forker?: boolean;
  /** false: warm Python drivers start as interpreters, never forked from a zygote. */
  readonly zygote?: boolean;
  /** Pre-started launchers are let go after this long without a run (CODEXEC_POOL_IDLE_MS). */
  readonly idleMs?: number;
  /** false: bind each /etc entry a sandbox sees instead of one copy of them (etc.ts). */
  readonly etcCopy?: boolean;
  /** false: a root server drops to the sandbox user with setpriv, not the drop program (drop.ts). */
  readonly drop?: boolean;
  /** Memory and processes of all runs together (CODEXEC_TOTAL_*): the runs' parent cgroup. */
  readonly totals?: CgroupTotals;
  /**
   * How a run is confined: 'namespaces' (bubblewrap; sandbox mode namespace) or 'landlock'
   * (sandbox mode landlock: no namespace, Landlock + seccomp + rlimits + cgroups, src/sandbox/landlock).
   */
  readonly confine?: 'namespaces' | 'landlock';
  /**
   * Where runs live (the sandbox dir, package environments, command workspaces): a root server's
   * landlock runs must be able to reach them as the sandbox user, which the probe checks.
   */
  readonly roots?: readonly string[];
  /**
   * Directories that hold nothing but run and session workspaces (the sandbox dir), each 0700 and
   * lent to its own run's uid: the only ones a login user (a host directory's owner, in landlock
   * mode) is ever lent search on.
   */
  readonly workspaceDirs?: readonly string[];
}

/**
 * A forked run's cgroup holds its own processes only; a cold run's holds bwrap and the sandbox's
 * pid 1 too. pids.max is lowered by these for a forked run, to allow its code what a cold run's gets.
 */
const OUTSIDE_FORKED_CGROUP = 2;
/** The probe run's end mark (SandboxSpec.endMark: END_MARK_BYTES). */
const PROBE_MARK = '\n[codexec-end probe00000000000]\n';

export class NamespaceBackend implements SandboxBackend {
  private host: HostSetup | undefined;
  private probed: Promise<Availability> | undefined;

  /** Run cgroups not yet removed: on exit the server kills their members and removes what it can. */
  private readonly live = new Set<RunCgroup>();
  private exitHook = false;

  constructor(private readonly options: NamespaceOptions = {}) {
    this.reach = new Reach(
      options.roots ?? [],
      (script) => this.confiner.runScript(script),
      options.workspaceDirs,
    );
  }

  /** Sandbox mode landlock's launcher and host facts (src/sandbox/landlock). */
  private readonly confiner = confiner();
  /** What a root server's landlock runs can reach as the sandbox user, and lending search to them. */
  private readonly reach: Reach;

  /** The options it was made with (a landlock backend of the same settings takes them). */
  get settings(): NamespaceOptions {
    return this.options;
  }

  get mode(): 'namespace' | 'landlock' {
    return this.options.confine === 'landlock' ? 'landlock' : 'namespace';
  }

  get capabilities(): Capabilities {
    const landlock = this.options.confine === 'landlock';
    return {
      ownHome: true,
      egress: landlock ? 'port' : 'socket',
      processesOutlive: landlock,
      terminal: landlock ? 'handed' : 'own',
      signalsGroup: false,
      ownInterpreters: false,
    };
  }

  private cgroups: RunCgroups | undefined;

  /** A run cgroup (a new one, or one an earlier run emptied), removed at exit if still there. */
  private newCgroup(host: HostSetup, limits: CgroupLimits): RunCgroup {
    if (!host.cgroups) throw new Error('no cgroups');
    this.cgroups ??= new RunCgroups(host.cgroups);
    const cgroup = this.cgroups.create(limits);
    this.track(cgroup);
    return cgroup;
  }

  private track(cgroup: RunCgroup): void {
    this.live.add(cgroup);
    if (this.exitHook) return;
    this.exitHook = true;
    process.once('exit', () => {
      for (const run of this.live) run.killAll();
      // Exit handlers are synchronous: give the kernel up to 200 ms to reap what was just killed.
      const tick = new Int32Array(new SharedArrayBuffer(4));
      for (let waited = 0; waited <= 200; waited += 5) {
        for (const run of this.live) if (run.tryRemove()) this.live.delete(run);
        if (this.live.size === 0) break;
        Atomics.wait(tick, 0, 0, 5);
      }
    });
  }

  private launcherPool: Launchers | undefined;

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

  private readonly zygotes = new Map<string, Zygote>();

  forksDrivers(): boolean {
    const host = this.setup();
    const enabled = this.options.zygote !== false && this.options.forker !== false;
    return enabled && host.root && host.cgroups !== undefined;
  }

  /** Launchers set aside by reserveLauncher() for the spawn() of that very spec, with their shape. */
  private readonly heldLaunchers = new WeakMap<
    SandboxSpec,
    { readonly ready: Ready; readonly shape: string }
  >();

  /**
   * Under load every ready launcher can be taken, and spawn() would then fork the whole server for
   * a direct start: wait (at most `ms`) for the next one the forker makes and set it aside for
   * spawn(spec), this very object.
   */
  async reserveLauncher(spec: SandboxSpec, ms: number): Promise<void> {
    const host = this.setup();
    if (!host.cgroups || spec.zygote || this.heldLaunchers.has(spec) || bindsHostDir(spec, this.mode)) return;
    const identity = host.root ? identityFor(spec) : undefined;
    const shape = this.shapeOf(spec, identity, this.dropWorks ? `/etc/${DROP_NAME}` : undefined);
    const ready = await this.launchers(host)?.takeWithin(shape, ms);
    if (ready) this.heldLaunchers.set(spec, { ready, shape: JSON.stringify(shape) });
  }

  /**
   * A run's stdio shape, as spawn() decides it: the reporting drop program's channel only where it
   * reports (a root server's one-shot namespace run with the drop program in its /etc copy).
   */
  private shapeOf(spec: SandboxSpec, identity: Identity | undefined, drop: string | undefined): Shape {
    const report =
      this.mode !== 'landlock' && reportsEnd(spec, { ...(identity && { identity }), ...(drop && { drop }) });
    return { stdin: spec.stdin, control: spec.control === true, report };
  }

  /** Runs forked by reserveFork() for the spawn() of that very spec. */
  private readonly reserved = new WeakMap<SandboxSpec, Prepared & { readonly child: ChildLike }>();

  /**
   * Fork the run of `spec` from a zygote, for spawn() to take: within `ms`, or not at all (spawn()
   * then starts it, or throws NotForkableError for `zygote: 'only'`).
   */
  async reserveFork(spec: SandboxSpec, ms: number): Promise<void> {
    const host = this.setup();
    const landlock = this.mode === 'landlock';
    const missing = landlock
      ? (this.confiner.unavailable() ?? this.confiner.refusal(spec))
      : (host.unavailable ?? (host.tools ? undefined : 'no tools'));
    if (!host.root || this.reserved.has(spec) || missing || !host.cgroups || bindsHostDir(spec, this.mode))
      return;
    const zygote = this.zygoteFor(spec);
    const seccomp = hostFilter({ sockets: socketPolicy(spec) });
    if (!zygote?.usable || !seccomp || (!landlock && !host.cat)) return;
    const identity = identityFor(spec);
    if (landlock && this.unreachable(spec, identity)) return; // a cold start reports it
    const lease = new Lease(identity);
    lease.lend(spec);
    let cgroup: RunCgroup;
    let tmp: string | undefined;
    try {
      const maxProcs = Math.max(1, spec.limits.maxProcs - OUTSIDE_FORKED_CGROUP);
      cgroup = this.newCgroup(host, { ...spec.limits, maxProcs });
      if (landlock) tmp = ownTmp(spec, identity);
    } catch {
      await lease.giveBack();
      return; // a cold start reports it
    }
    const system = landlock ? { mounts: [] } : this.systemNow(host);
    const prepared: Prepared = { cgroup, system, lease, alone: true, ...(tmp && { tmp }) };
    let forking: Promise<ChildLike>;
    try {
      const rlimits = { cgroup: true, identity, ...cpu(spec) };
      if (landlock) {
        const { uid, gid } = identity;
        const access = this.confiner.access(spec, tmp, host.privateDirs);
        const landlockPart = this.confiner.landlockOnly(access).toString('hex');
        const env = tmp ? { ...spec.env, TMPDIR: tmp } : spec.env;
        const sandbox = { landlock: landlockPart, uid, gid, env, cwd: spec.cwd };
        forking = zygote.fork(spec, cgroup, sandbox, seccomp, ulimitArgs(rlimitsFor(spec, rlimits)));
      } else {
        const options = bwrapOptions(host, spec, identity, system, { cgroup: true, launcher: true });
        const sandbox = zygoteSandbox(spec, options, identity, host.cat as string);
        forking = zygote.fork(spec, cgroup, sandbox, seccomp, ulimitArgs(rlimitsFor(spec, options)));
      }
    } catch (error) {
      await release(prepared, this.cgroups, this.live);
      throw error;
    }
    const child = await settledWithin(
      forking.catch(() => undefined),
      ms,
    );
    if (child) {
      this.reserved.set(spec, { ...prepared, child });
      return;
    }
    // Failed, or too slow: what it forks later goes, and what was made for it. The workspace is
    // given back now, not then: spawn() lends it again to the sandbox it starts instead, and a
    // late give-back took it from that one (its program then could not read its own script).
    await lease.giveBack();
    const orphan = { ...prepared, lease: undefined };
    void forking.then(
      (late) => this.wrap(late, orphan).dispose(),
      () => release(orphan, this.cgroups, this.live),
    );
  }

  /**
   * The zygote of the spec's interpreter (drivers/zygote.py) that forks warm Python drivers for a
   * root server. One per interpreter and start-up environment: the variables a run may change
   * (PER_RUN_ENV) are set in the forked process; the others must match.
   */
  private zygoteFor(spec: SandboxSpec): Zygote | undefined {
    const [python, driver] = spec.argv;
    if (!spec.zygote || !this.forksDrivers() || !python || !driver) return undefined;
    if (dirname(driver) !== DRIVERS) return undefined;
    const fixed = Object.fromEntries(Object.entries(spec.env).filter(([name]) => !PER_RUN_ENV.has(name)));
    const key = JSON.stringify([python, fixed]);
    let zygote = this.zygotes.get(key);
    if (!zygote) {
      zygote = new Zygote(python, fixed, this.options.idleMs ?? LAUNCHER_IDLE_MS);
      this.zygotes.set(key, zygote);
    }
    return zygote;
  }

  private etc: EtcCopies | undefined;
  private etcMounts: { readonly dir: string; readonly mounts: readonly SystemMount[] } | undefined;
  /**
   * Whether the copies hold a drop program (drop.ts) that runs here: false without one, undefined
   * until the first copy has proven it.
   */
  private dropWorks: boolean | undefined;

  /**
   * The system mounts of a sandbox started now, the copy of /etc they hold until released, and
   * the drop program's path in the sandbox when that copy has one that runs (a root server's).
   */
  private systemNow(host: HostSetup): { mounts: readonly SystemMount[]; etc?: EtcLease; drop?: string } {
    if (this.options.etcCopy === false) return { mounts: host.system };
    if (!this.etc) {
      const program = host.root && this.options.drop !== false ? dropProgram() : undefined;
      const files = program ? [{ name: DROP_NAME, content: program, mode: 0o555 }] : [];
      this.etc = new EtcCopies('/etc', etcEntries(), BOUND_ETC, { files });
      if (!program) this.dropWorks = false;
    }
    const etc = this.etc.acquire();
    if (!etc) return { mounts: host.system };
    this.dropWorks ??= dropRuns(join(etc.dir, DROP_NAME));
    if (this.etcMounts?.dir !== etc.dir)
      this.etcMounts = { dir: etc.dir, mounts: systemMounts('/', etc.dir) };
    return { mounts: this.etcMounts.mounts, etc, ...(this.dropWorks && { drop: `/etc/${DROP_NAME}` }) };
  }

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
    this.probed ??= this.runProbe();
    return this.probed;
  }

  private async runProbe(): Promise<Availability> {
    const host = this.setup();
    const missing =
      this.mode === 'landlock'
        ? (this.confiner.unavailable() ?? this.unreachableRoot(host))
        : host.unavailable;
    if (missing) return { available: false, reason: missing };
    const truePath = findOnPath('true') ?? '/bin/true';
    const proc = this.spawn({
      argv: [truePath],
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      writablePaths: [],
      readablePaths: [],
      limits: { memoryMb: 64, maxProcs: 16, maxFileMb: 1 },
      network: 'none',
      stdin: 'ignore',
      // As a one-shot run: its end reported where it can be, which this proves too.
      endMark: PROBE_MARK,
    });
    let stderr = '';
    proc.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    proc.stdout.resume();
    const exit = await proc.exited;
    await proc.dispose();
    if (exit.code === 0) return { available: true };
    const said = stderr.replace(PROBE_MARK, '').trim();
    const why = exit.spawnError?.message ?? (said || `exit ${exit.code ?? exit.signal}`);
    return {
      available: false,
      reason:
        `bubblewrap could not start a sandbox here (${why}); ` +
        (this.setup().root
          ? 'as root it needs CAP_SYS_ADMIN (a container started without it cannot nest namespaces)'
          : 'user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1) or the container forbids them'),
    };
  }

  /** Why the sandbox user of a root server's landlock run cannot reach a path of `spec`, or undefined. */
  private unreachable(spec: SandboxSpec, identity: { readonly uid: number; readonly gid: number }) {
    // The run's own workspaces are lent to its uid before it starts: their insides need no search.
    const lent = lendable(spec);
    for (const path of [spec.cwd, ...spec.writablePaths, ...spec.readablePaths]) {
      const why = this.reach.check(path, identity, false, lent);
      if (why) return why;
    }
    return undefined;
  }

  /** A root server's landlock runs: the first root of runs the sandbox user cannot reach, as a sentence. */
  private unreachableRoot(host: HostSetup): string | undefined {
    if (!host.root) return undefined;
    for (const root of this.options.roots ?? []) {
      const why = this.reach.check(root, NOBODY, true);
      if (why) return why;
    }
    return undefined;
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

  /** spawn(), with the launcher reserveLauncher() set aside for a run of `shape`, if any. */
  private spawnWith(spec: SandboxSpec, held: (shape: Shape) => Ready | undefined): SandboxedProcess {
    const host = this.setup();
    const landlock = this.mode === 'landlock';
    const missing = landlock
      ? (this.confiner.unavailable() ?? this.confiner.refusal(spec))
      : host.tools
        ? host.unavailable
        : (host.unavailable ?? 'no tools');
    if (missing) throw new SandboxUnavailableError(`${this.mode} sandbox unavailable: ${missing}`);
    const reserved = this.reserved.get(spec);
    if (reserved) {
      this.reserved.delete(spec);
      return this.wrap(reserved.child, reserved);
    }
    if (spec.zygote === 'only') throw new NotForkableError();
    // Without a cgroup or a pid namespace, a landlock run is ended through its process group.
    const sessionFixed = landlock && !host.cgroups;
    const seccomp = hostFilter({ sockets: socketPolicy(spec), sessionFixed });
    if (!seccomp)
      throw new SandboxUnavailableError(`${this.mode} sandbox unavailable: no seccomp filter for this arch`);
    const identity = host.root ? identityFor(spec) : undefined;
    const blocked = landlock && identity ? this.unreachable(spec, identity) : undefined;
    if (blocked) throw new SandboxUnavailableError(`landlock sandbox: ${blocked}`);
    const lease = identity ? new Lease(identity) : undefined;
    lease?.lend(spec);
    const system = landlock ? { mounts: [] } : this.systemNow(host);
    const shape = this.shapeOf(spec, identity, system.drop);
    const report = shape.report;
    // The reporting drop program is one more process of the run's; a landlock run has no bwrap.
    const maxProcs = report
      ? spec.limits.maxProcs + 1
      : landlock
        ? Math.max(1, spec.limits.maxProcs - OUTSIDE_FORKED_CGROUP)
        : spec.limits.maxProcs;
    const limits = { ...spec.limits, maxProcs };
    // A host directory's descriptor goes to bwrap itself, which only a direct start can hand it.
    const ready =
      host.cgroups && !bindsHostDir(spec, this.mode)
        ? (held(shape) ?? this.launchers(host)?.take(shape))
        : undefined;
    let cgroup = ready?.cgroup;
    let tmp: string | undefined;
    try {
      if (host.cgroups && !cgroup) {
        cgroup = this.newCgroup(host, limits);
      }
      if (landlock) tmp = ownTmp(spec, identity);
    } catch (error) {
      system.etc?.release();
      void lease?.giveBack();
      throw new SandboxUnavailableError(`could not create the run's cgroup: ${(error as Error).message}`);
    }
    let started: Started;
    try {
      if (landlock) {
        const rlimits = rlimitsFor(spec, {
          cgroup: cgroup !== undefined,
          ...(identity && { identity }),
          ...cpu(spec),
        });
        const script = this.confiner.launch({
          access: this.confiner.access(spec, tmp, host.privateDirs),
          seccomp,
          ...(identity && { identity }),
          // A launcher sets the rlimits (and kills the run with the server: its cgroup); else the script.
          dieWithParent: !ready,
          rlimits: ready ? [] : rlimits,
          argv: spec.argv,
          env: tmp ? { ...spec.env, TMPDIR: tmp } : spec.env,
          cwd: spec.cwd,
          ...(spec.terminal && { terminal: true }),
        });
        // The launcher's own arguments are the program's: it runs them if the script's exec fails.
        const argv = [this.confiner.program(), ...spec.argv];
        started = ready
          ? ready.launch(argv, script, limits, ulimitArgs(rlimits))
          : startDirect(argv, shape, script, cgroup);
      } else {
        const options = bwrapOptions(host, spec, identity, system, {
          cgroup: cgroup !== undefined,
          launcher: ready !== undefined,
        });
        const mark = report ? spec.endMark : undefined;
        const argv = buildBwrapArgs(spec, options);
        started = ready
          ? ready.launch(argv, seccomp, limits, ulimitArgs(rlimitsFor(spec, options)), mark)
          : startDirect(argv, shape, seccomp, cgroup, mark, spec.hostDirFd);
      }
    } catch (error) {
      system.etc?.release();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
      throw error;
    }
    const run = this.wrap(started.child, {
      cgroup,
      system,
      lease,
      alone: landlock,
      report,
      ...(tmp && { tmp }),
    });
    return sessionFixed ? this.reaped(run) : run;
  }

  /** Process groups of landlock runs without a cgroup, killed if the server dies (even by SIGKILL). */
  private groups: Watcher | undefined;

  private reaped(run: SandboxedProcess): SandboxedProcess {
    const { pid } = run;
    if (pid === undefined) return run;
    this.groups ??= processGroupReaper();
    const groups = this.groups;
    groups.watch(pid);
    return {
      ...run,
      async dispose() {
        await run.dispose();
        groups.release(pid);
      },
    };
  }

  /** The run of `child` (bwrap, or a zygote's fork of the run's process) and what was made for it. */
  private wrap(child: ChildLike, prepared: Prepared): SandboxedProcess & { running(): boolean } {
    const { cgroup, alone } = prepared;
    const pid = child.pid;
    let alive = pid !== undefined && child.exitCode === null && child.signalCode === null;
    let limit: LimitKind | undefined;
    const exited = new Promise<Exit>((resolve) => {
      child.once('error', (error) => {
        alive = false;
        resolve({ code: null, signal: null, spawnError: error });
      });
      child.once('exit', (exitCode: number | null, sig: NodeJS.Signals | null) => {
        alive = false;
        // A landlock run's process is the program itself: its signal reported as bwrap reports
        // its child's (128+N), as every run of this backend ends.
        const code = sig && alone ? 128 + constants.signals[sig] : exitCode;
        const signal = sig && alone ? null : sig;
        limit = cgroup?.limitHit() ?? signalLimit(code);
        resolve({ code, signal, ...(limit && { limit }) });
      });
    });
    const reported = prepared.report ? statusLine(child.stdio[REPORT_FD] as Readable) : undefined;
    void reported?.then((code) => {
      if (code !== undefined) limit ??= cgroup?.limitHit() ?? signalLimit(code);
    });
    const { stdout, stderr } = child;
    if (!stdout || !stderr) throw new Error('spawn returned no output pipes');
    let disposed: Promise<void> | undefined;
    const live = this.live;
    const cgroups = this.cgroups;
    const totals = this.options.totals;
    return {
      pid,
      stdout,
      stderr,
      stdin: child.stdin,
      control: child.stdio[3] ? (child.stdio[3] as Duplex) : null,
      exited,
      ...(reported && { reported }),
      running: () => alive,
      kill(name) {
        if (alive && pid !== undefined) {
          if (name === 'SIGKILL') signal(alone && !cgroup ? -pid : pid, name);
          // A forked (or landlock) run's cgroup holds its processes and nothing else.
          else if (alone && cgroup) for (const member of cgroup.pids()) signal(member, name);
          // A landlock run's first process is the program itself.
          else if (alone) for (const member of [pid, ...descendants(pid)]) signal(member, name);
          else {
            const members = descendants(pid);
            // bwrap has not cloned the sandbox yet: nothing to be graceful with.
            if (members.length === 0) signal(pid, name);
            for (const member of members) signal(member, name);
          }
        }
        if (name === 'SIGKILL') cgroup?.killAll();
      },
      // The run's cgroup holds every process of it (and a cold run's bwrap).
      ...(cgroup && { stop: () => cgroup.stopAll(), holdsStopped: true }),
      limitHit: () => limit ?? cgroup?.limitHit(),
      limitDetail: (kind) => (totals && cgroup?.hitTotal(kind) ? totalLimitNote(kind, totals) : undefined),
      memoryMb: () => cgroup?.memoryMb(),
      cpuUsec: () => cgroup?.cpuUsec(),
      dispose() {
        disposed ??= (async () => {
          if (alive && pid !== undefined) signal(pid, 'SIGKILL');
          // A landlock run without a cgroup: its process group, which no process of it can leave.
          if (alone && !cgroup && pid !== undefined) signal(-pid, 'SIGKILL');
          await exited;
          await release(prepared, cgroups, live);
        })();
        return disposed;
      },
    };
  }
}

/** The limit an exit status names: bwrap's 128+N for the signal an rlimit sends. */
function signalLimit(code: number | null): LimitKind | undefined {
  return code === SIGXCPU ? 'cpu' : code === SIGXFSZ ? 'file_size' : undefined;
}

/** The status the drop program reports ("N\n"), then the channel is let go; undefined if none comes. */
function statusLine(channel: Readable | undefined): Promise<number | undefined> {
  if (!channel) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let text = '';
    const done = (code: number | undefined) => {
      channel.removeAllListeners('data');
      channel.destroy();
      resolve(code);
    };
    channel.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const line = /^(\d{1,3})\n/.exec(text);
      if (line) done(Number(line[1]));
      else if (text.includes('\n') || text.length > 8) done(undefined);
    });
    channel.once('end', () => done(undefined));
    channel.once('close', () => done(undefined));
  });
}

/** What a run was given besides its process: released once it has exited. */
interface Prepared {
  readonly cgroup: RunCgroup | undefined;
  readonly system: { readonly etc?: EtcLease };
  readonly lease: Lease | undefined;
  /**
   * Forked by a zygote, or confined by landlock: the run's processes are its program's alone (no
   * bwrap, no sandbox init), in its cgroup if it has one.
   */
  readonly alone: boolean;
  /** The run's own temporary directory (landlock: TMPDIR), removed with it. */
  readonly tmp?: string;
  /** Its drop program reports the program's end on REPORT_FD (`drop -r`, args.ts reportsEnd). */
  readonly report?: boolean;
}

async function release(prepared: Prepared, cgroups: RunCgroups | undefined, live: Set<RunCgroup>) {
  const { cgroup, system, lease, tmp } = prepared;
  system.etc?.release();
  if (cgroup && !(await cgroups?.release(cgroup))) live.delete(cgroup);
  // Once its processes are gone (the cgroup drained): none can swap what is removed.
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  await lease?.giveBack();
}

function bwrapOptions(
  host: HostSetup,
  spec: SandboxSpec,
  identity: { readonly uid: number; readonly gid: number } | undefined,
  system: { readonly mounts: readonly SystemMount[]; readonly drop?: string },
  how: { readonly cgroup: boolean; readonly launcher: boolean },
): BwrapOptions {
  return {
    tools: host.tools as NonNullable<HostSetup['tools']>,
    system: system.mounts,
    ...(identity && { identity }),
    ...(system.drop && { drop: system.drop }),
    cgroup: how.cgroup,
    // A launcher sets the rlimits itself (setrlimit, bash's ulimit), saving prlimit's exec.
    rlimitsBy: how.launcher ? 'caller' : 'prlimit',
    seccomp: true,
    ...(spec.limits.cpuSeconds !== undefined && { cpuSeconds: spec.limits.cpuSeconds }),
    privateDirs: host.privateDirs,
    nprocPerUserNamespace: host.nprocPerUserNamespace,
  };
}

/**
 * Variables a run's sandbox may set to its own values (most of them paths in its workspace) without
 * a zygote of its own: the forked process takes the whole of the run's environment before the
 * driver starts (drivers/zygote.py), and of these the interpreter reads at start-up only PYTHONPATH
 * (and CODEXEC_PYTHON_PACKAGES, through drivers/mpl/sitecustomize.py), which the zygote then puts
 * on sys.path as the interpreter would have, and HOME, for a user
 * site-packages the zygote never has (its HOME does not exist; site's user dirs are cleared). The
 * matplotlib ones (engine/images.ts figureEnv) are read only once the program imports matplotlib
 * (MPLCONFIGDIR), saves a figure (CODEXEC_FIGURES_DIR) or fontconfig builds its cache
 * (XDG_CACHE_HOME).
 */
const PER_RUN_ENV: ReadonlySet<string> = new Set([
  'PYTHONPATH',
  'CODEXEC_PYTHON_PACKAGES',
  'HOME',
  'CODEXEC_FIGURES_DIR',
  'MPLCONFIGDIR',
  'XDG_CACHE_HOME',
]);

/**
 * What a zygote needs to build the run's sandbox and confine the program's process in it
 * (drivers/zygote.py): bwrap keeps up the same sandbox a cold run gets, around a placeholder.
 */
function zygoteSandbox(
  spec: SandboxSpec,
  options: BwrapOptions,
  identity: { readonly uid: number; readonly gid: number },
  cat: string,
): ZygoteSandbox {
  const placeholder = [cat, '/proc/sys/kernel/ostype', '-'];
  // The interpreter's install stays visible, as in a cold run: its stdlib, sys.executable.
  const interpreter = interpreterMount(spec.argv[0] as string, options.privateDirs);
  const sandbox = { ...spec, argv: placeholder, readablePaths: [interpreter, ...spec.readablePaths] };
  // The zygote appends the placeholder: its own where it can run one (drivers/zygote.py), or this.
  const bwrap = buildBwrapArgs(sandbox, { ...options, placeholder: true }).slice(0, -placeholder.length);
  const { uid, gid } = identity;
  return { bwrap, placeholder, uid, gid, env: spec.env, cwd: spec.cwd };
}

/** RLIMIT_CPU's value, where the run has one. */
function cpu(spec: SandboxSpec): { cpuSeconds?: number } {
  return spec.limits.cpuSeconds !== undefined ? { cpuSeconds: spec.limits.cpuSeconds } : {};
}

/** The sockets a run's code may create: its network's (seccomp.ts). */
function socketPolicy(spec: SandboxSpec): SocketPolicy {
  return spec.network === 'host' ? 'any' : spec.network === 'allowlist' ? 'unix+tcp' : 'unix';
}

/** Whether bwrap binds the spec's host directory by its descriptor (namespace mode, a root server's). */
function bindsHostDir(spec: SandboxSpec, mode: BackendMode): boolean {
  return mode !== 'landlock' && spec.hostDirFd !== undefined;
}
