// Sandbox mode landlock: the host's runs (cgroups, launchers, zygotes, ownership lending) with no
// namespace at all. Each program is confined by Landlock (the kernel's best ABI), codexec's
// seccomp filter and rlimits, applied by codexec's launcher from a script built per run.
import { lstatSync, rmSync } from 'node:fs';
import { SandboxUnavailableError } from '../../errors/index.js';
import {
  cpu,
  findOnPath,
  HostBackend,
  type HostOptions,
  type HostSetup,
  hostFilter,
  type Identity,
  lendable,
  lendTo,
  OUTSIDE_FORKED_CGROUP,
  processGroupReaper,
  type Ready,
  type RunCgroup,
  reclaimTree,
  runRlimits,
  type Shape,
  type Started,
  socketPolicy,
  startDirect,
  ulimitArgs,
  type Watcher,
} from '../host/index.js';
import type { Capabilities, SandboxedProcess, SandboxSpec } from '../types.js';
import { confiner, ownTmp } from './confiner.js';
import { Reach } from './reach.js';
import { claimBlock, type DeadBlock } from './uid-blocks.js';
import { ANY_RUN, isRunUid, RunUids, type UidBlock } from './uids.js';

export interface LandlockOptions extends HostOptions {
  /**
   * Where runs live (the sandbox dir, package environments, command workspaces): a root server's
   * runs must be able to reach them as the sandbox user, which the probe checks.
   */
  readonly roots?: readonly string[];
  /**
   * Directories that hold nothing but run and session workspaces (the sandbox dir), each 0700 and
   * lent to its own run's uid: the only ones a login user (a host directory's owner) is ever lent
   * search on.
   */
  readonly workspaceDirs?: readonly string[];
  /**
   * codexec's trees that outlive a server (command workspaces, package environments): what runs of
   * a server that died left owned there is given back when its uids serve again.
   */
  readonly sharedTrees?: readonly string[];
}

/** What a cold run is started with, besides its spec. */
interface ColdStart {
  readonly identity: Identity | undefined;
  readonly seccomp: Buffer;
  readonly ready: Ready | undefined;
  readonly shape: Shape;
  readonly limits: SandboxSpec['limits'];
  readonly cgroup: RunCgroup | undefined;
  readonly tmp: string | undefined;
}

export class LandlockBackend extends HostBackend<LandlockOptions> {
  readonly mode = 'landlock' as const;
  readonly capabilities: Capabilities = {
    ownHome: true,
    egress: 'port',
    processesOutlive: true,
    terminal: 'handed',
    signalsGroup: false,
    ownInterpreters: false,
  };

  /** The launcher and host facts, one per server process. */
  private readonly confiner = confiner();
  /** What a root server's runs can reach as the sandbox user, and lending search to them. */
  private readonly reach: Reach;
  /** Process groups of runs without a cgroup, killed if the server dies (even by SIGKILL). */
  private groups: Watcher | undefined;
  /** A root server's runs: each a uid of its own, from the block its probe claimed. */
  private runUids: RunUids | undefined;
  private block: UidBlock | undefined;
  private claimed: Promise<void> | undefined;

  constructor(options: LandlockOptions = {}) {
    super(options);
    this.reach = new Reach(
      options.roots ?? [],
      (script) => this.confiner.runScript(script),
      options.workspaceDirs,
    );
  }

  protected unavailable(host: HostSetup): string | undefined {
    return this.confiner.unavailable() ?? this.unreachableRoot(host);
  }

  /** Why `spec` cannot run here: no Landlock, or a network it cannot confine. */
  private refusal(spec: SandboxSpec): string | undefined {
    return this.confiner.unavailable() ?? this.confiner.refusal(spec);
  }

  protected launchShape(spec: SandboxSpec): Shape {
    return shapeOf(spec);
  }

  /**
   * Fork the run of `spec` from a zygote, for spawn() to take: within `ms`, or not at all (spawn()
   * then starts it, or throws NotForkableError for `zygote: 'only'`).
   */
  async reserveFork(spec: SandboxSpec, ms: number): Promise<void> {
    const host = this.setup();
    if (!this.mayFork(spec, host) || this.refusal(spec)) return;
    const zygote = this.zygoteFor(spec);
    const seccomp = hostFilter({
      sockets: socketPolicy(spec, false),
      metadataByDescriptor: ownsBeyond(spec),
      noHostIpc: true,
    });
    if (!zygote?.usable || !seccomp) return;
    if (!(spec.runAs || this.runUids) || this.unreachable(spec, spec.runAs ?? ANY_RUN)) return; // a cold start reports it
    const identity = this.identityOf(spec);
    const parts = await this.forkParts(spec, host, identity, () => ownTmp(spec, identity));
    if (!parts) return;
    const prepared = { ...parts, alone: true };
    let forking: ReturnType<typeof zygote.fork>;
    try {
      const { uid, gid } = identity;
      const access = this.confiner.access(spec, parts.tmp, host.privateDirs);
      const landlock = this.confiner.landlockOnly(access).toString('hex');
      const env = parts.tmp ? { ...spec.env, TMPDIR: parts.tmp } : spec.env;
      const sandbox = { landlock, uid, gid, env, cwd: spec.cwd };
      const rlimits = runRlimits(spec, { cgroup: true, identity, ...cpu(spec) });
      forking = zygote.fork(spec, parts.cgroup, sandbox, seccomp, ulimitArgs(rlimits));
    } catch (error) {
      await this.release(prepared);
      throw error;
    }
    await this.keepFork(spec, prepared, forking, ms);
  }

  protected spawnWith(spec: SandboxSpec, held: (shape: Shape) => Ready | undefined): SandboxedProcess {
    const host = this.setup();
    const missing = this.refusal(spec);
    if (missing) throw new SandboxUnavailableError(`landlock sandbox unavailable: ${missing}`);
    const forked = this.takeFork(spec);
    if (forked) return forked;
    // Without a cgroup or a pid namespace, a run is ended through its process group.
    const sessionFixed = !host.cgroups;
    const seccomp = this.seccompFor(spec, {
      sessionFixed,
      metadataByDescriptor: ownsBeyond(spec),
      noHostIpc: true,
    });
    const blocked = host.root ? this.unreachable(spec, spec.runAs ?? ANY_RUN) : undefined;
    if (blocked) throw new SandboxUnavailableError(`landlock sandbox: ${blocked}`);
    const foreign = host.root && !spec.runAs ? this.heldElsewhere(spec) : undefined;
    if (foreign) throw new SandboxUnavailableError(`landlock sandbox: ${foreign}`);
    const identity = host.root ? this.identityOf(spec) : undefined;
    const lease = this.lendTo(spec, identity);
    const shape = shapeOf(spec);
    // No bwrap: the run's cgroup holds its program's processes alone, as a forked run's.
    const maxProcs = Math.max(1, spec.limits.maxProcs - OUTSIDE_FORKED_CGROUP);
    const limits = { ...spec.limits, maxProcs };
    const ready = this.launcherFor(host, shape, held);
    const undo = () => void lease?.giveBack();
    const { cgroup, tmp } = this.runParts(host, ready, limits, undo, () => ownTmp(spec, identity));
    let started: Started;
    try {
      started = this.start(spec, host, { identity, seccomp, ready, shape, limits, cgroup, tmp });
    } catch (error) {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
      undo();
      throw error;
    }
    const run = this.wrap(started.child, { cgroup, lease, alone: true, ...(tmp && { tmp }) });
    return sessionFixed ? this.reaped(run) : run;
  }

  /**
   * Why a workspace `spec` writes is another server's run's now (two servers on one home share the
   * command workspace; a root server's runs have uids of its block alone, and a workspace is one
   * run uid's while a run writes it): a run of this server could not enter it.
   */
  private heldElsewhere(spec: SandboxSpec): string | undefined {
    const block = this.block;
    for (const path of lendable(spec)) {
      let uid: number;
      try {
        uid = lstatSync(path).uid;
      } catch {
        continue; // made by the run, or reported by its start
      }
      if (!isRunUid(uid) || (block && uid >= block.first && uid < block.first + block.count)) continue;
      return (
        `${path} is held by a run of another codexec server (uid ${uid}): each root server's landlock ` +
        "runs have uids of their own, and a workspace is one run's while it writes there. Retry once that " +
        "run has ended (a killed server's is given back by the next codexec server started on this host), " +
        'or give each server a CODEXEC_HOME of its own'
      );
    }
    return undefined;
  }

  /**
   * Whom a root server runs `spec`'s code as: its host directory's owner, else a uid of the run's
   * own (shared only with runs that write the same workspace), returned with the lease.
   */
  private identityOf(spec: SandboxSpec): Identity {
    if (spec.runAs) return spec.runAs;
    if (!this.runUids)
      throw new SandboxUnavailableError(
        "landlock sandbox: a root server's runs start after the backend's probe, which claims their uids",
      );
    return this.runUids.take(lendable(spec));
  }

  protected override async prepare(host: HostSetup): Promise<void> {
    if (!host.root) return;
    const flock = findOnPath('flock');
    if (!flock)
      throw new SandboxUnavailableError(
        "landlock sandbox: flock not found (util-linux); it holds this server's block of run uids",
      );
    const trees = this.options.sharedTrees ?? [];
    // Each tree walked once, for every dead block that names it.
    const reclaim = async (blocks: readonly DeadBlock[]) => {
      for (const tree of new Set(blocks.flatMap((block) => block.trees))) {
        const named = blocks.filter((block) => block.trees.includes(tree));
        await reclaimTree(tree, (uid) =>
          named.some(({ first, count }) => uid >= first && uid < first + count),
        );
      }
    };
    this.claimed ??= claimBlock({ flock, trees, reclaim }).then((block) => {
      this.block = block;
      this.runUids = new RunUids(block);
    });
    await this.claimed;
  }

  /** The block goes back to serve again only when every uid of it was given back whole. */
  async shutdown(): Promise<void> {
    if (this.runUids?.inUse === 0) this.block?.retire();
    else this.block?.release();
    this.block = undefined;
  }

  /** lendTo(), the run's uid returned if lending fails. */
  private lendTo(spec: SandboxSpec, identity: Identity | undefined): ReturnType<typeof lendTo> {
    try {
      return lendTo(spec, identity);
    } catch (error) {
      identity?.returned?.();
      throw error;
    }
  }

  /** Start a cold run: its confine script, run by a ready launcher or by a direct start. */
  private start(spec: SandboxSpec, host: HostSetup, cold: ColdStart): Started {
    const { identity, ready, cgroup, tmp } = cold;
    const rlimits = runRlimits(spec, {
      cgroup: cgroup !== undefined,
      ...(identity && { identity }),
      ...cpu(spec),
    });
    const script = this.confiner.launch({
      access: this.confiner.access(spec, tmp, host.privateDirs),
      seccomp: cold.seccomp,
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
    return ready
      ? ready.launch(argv, script, cold.limits, ulimitArgs(rlimits))
      : startDirect(argv, cold.shape, script, cgroup);
  }

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

  /** Why the sandbox user of a root server's run cannot reach a path of `spec`, or undefined. */
  private unreachable(spec: SandboxSpec, identity: Identity): string | undefined {
    // The run's own workspaces are lent to its uid before it starts: their insides need no search.
    const lent = lendable(spec);
    const mounts = (spec.mounts ?? []).map((mount) => mount.path);
    for (const path of [spec.cwd, ...spec.writablePaths, ...spec.readablePaths, ...mounts]) {
      const why = this.reach.check(path, identity, false, lent);
      if (why) return why;
    }
    return undefined;
  }

  /** A root server's runs: the first root of runs the sandbox user cannot reach, as a sentence. */
  private unreachableRoot(host: HostSetup): string | undefined {
    if (!host.root) return undefined;
    for (const root of this.options.roots ?? []) {
      const why = this.reach.check(root, ANY_RUN, true);
      if (why) return why;
    }
    return undefined;
  }
}

/**
 * Whether the run's uid owns files beyond the paths it may write: a host directory's owner, run
 * by a root server. Landlock checks no change of mode, owner, times or extended attributes, so
 * those go through descriptors only, which only what Landlock let the run open yields. A root
 * server's other runs each have a uid of their own, which owns nothing else. (A non-root server's
 * runs are its user, who owns more: that gap is documented, as refusing them by path there would
 * take `python -m venv`, `shutil.copytree` and `chmod +x` from the mode's every user.)
 */
function ownsBeyond(spec: SandboxSpec): boolean {
  return spec.runAs !== undefined;
}

/** A run's stdio shape: no drop program reports a landlock run's end. */
function shapeOf(spec: SandboxSpec): Shape {
  return { stdin: spec.stdin, control: spec.control === true, report: false };
}
