// The namespace backend (Linux default): bubblewrap + seccomp + rlimits + cgroups, network off,
// never host root. Builds the command line with buildBwrapArgs() and spawns it here, only here.
import { SandboxUnavailableError } from '../../errors/index.js';
import {
  forwards,
  HostBackend,
  type HostOptions,
  type HostSetup,
  hostFilter,
  type Identity,
  identityFor,
  interpreterMount,
  lendTo,
  NEST,
  type Ready,
  type Shape,
  type Started,
  socketPolicy,
  startDirect,
  ulimitArgs,
  type ZygoteSandbox,
} from '../host/index.js';
import type { Capabilities, SandboxedProcess, SandboxSpec } from '../types.js';
import { type BwrapOptions, buildBwrapArgs, filesystemOps, reportsEnd, rlimitsFor } from './args.js';
import { nestPlan } from './nest.js';
import { type SandboxSystem, SystemView } from './system.js';

export interface NamespaceOptions extends HostOptions {
  /** false: bind each /etc entry a sandbox sees instead of one copy of them (etc.ts). */
  readonly etcCopy?: boolean;
  /** false: bind each driver file a sandbox reads instead of one copy of them (views.ts). */
  readonly driverCopy?: boolean;
  /** false: a root server drops to the sandbox user with setpriv, not the drop program (drop.ts). */
  readonly drop?: boolean;
  /**
   * Where runs live, and the directories that hold nothing but run workspaces: the landlock
   * backend the registry makes with these settings checks and lends them (its runs share the
   * host's tree); a namespace sandbox binds each run's own paths and needs neither.
   */
  readonly roots?: readonly string[];
  readonly workspaceDirs?: readonly string[];
  /** codexec's trees that outlive a server: the landlock backend reclaims dead runs' files there. */
  readonly sharedTrees?: readonly string[];
}

export class NamespaceBackend extends HostBackend<NamespaceOptions> {
  readonly mode = 'namespace' as const;
  readonly capabilities: Capabilities = {
    ownHome: true,
    egress: 'socket',
    processesOutlive: false,
    terminal: 'own',
    signalsGroup: false,
    ownInterpreters: false,
  };

  private readonly system: SystemView;

  constructor(options: NamespaceOptions = {}) {
    super(options);
    this.system = new SystemView(options);
  }

  protected unavailable(host: HostSetup): string | undefined {
    return host.unavailable;
  }

  /** Why no run can start: a required layer missing, or the tools to build the sandbox with. */
  private refusal(host: HostSetup): string | undefined {
    return host.unavailable ?? (host.tools ? undefined : 'no tools');
  }

  protected launchShape(spec: SandboxSpec, host: HostSetup): Shape | undefined {
    if (bindsHostDir(spec)) return undefined;
    return shapeOf(spec, host.root ? identityFor(spec) : undefined, this.system.drop);
  }

  /**
   * Fork the run of `spec` from a zygote, for spawn() to take: within `ms`, or not at all (spawn()
   * then starts it, or throws NotForkableError for `zygote: 'only'`).
   */
  async reserveFork(spec: SandboxSpec, ms: number): Promise<void> {
    const host = this.setup();
    if (!this.mayFork(spec, host) || this.refusal(host) || bindsHostDir(spec) || !host.cat) return;
    const zygote = this.zygoteFor(spec);
    const seccomp = hostFilter({ sockets: socketPolicy(spec, true) });
    if (!zygote?.usable || !seccomp) return;
    const identity = identityFor(spec);
    const parts = await this.forkParts(spec, host, identity);
    if (!parts) return; // a cold start reports it
    const system = this.system.now(host);
    const prepared = { ...parts, held: system.etc, alone: true };
    let forking: ReturnType<typeof zygote.fork>;
    try {
      const options = bwrapOptions(host, spec, identity, system, { cgroup: true, launcher: true });
      const sandbox = zygoteSandbox(spec, options, identity, host.cat, zygote.execs);
      forking = zygote.fork(spec, parts.cgroup, sandbox, seccomp, ulimitArgs(rlimitsFor(spec, options)));
    } catch (error) {
      await this.release(prepared);
      throw error;
    }
    await this.keepFork(spec, prepared, forking, ms);
  }

  protected spawnWith(spec: SandboxSpec, held: (shape: Shape) => Ready | undefined): SandboxedProcess {
    const host = this.setup();
    const missing = this.refusal(host);
    if (missing) throw new SandboxUnavailableError(`namespace sandbox unavailable: ${missing}`);
    const forked = this.takeFork(spec);
    if (forked) return forked;
    const seccomp = this.seccompFor(spec);
    const identity = host.root ? identityFor(spec) : undefined;
    const lease = lendTo(spec, identity);
    const system = this.system.now(host);
    const shape = shapeOf(spec, identity, system.drop);
    // The reporting drop program is one more process of the run's.
    const limits = { ...spec.limits, maxProcs: spec.limits.maxProcs + (shape.report ? 1 : 0) };
    // A host directory's descriptor goes to bwrap itself, which only a direct start can hand it.
    const ready = bindsHostDir(spec) ? undefined : this.launcherFor(host, shape, held);
    const { cgroup } = this.runParts(host, ready, limits, () => {
      system.etc?.release();
      void lease?.giveBack();
    });
    let started: Started;
    try {
      const how = { cgroup: cgroup !== undefined, launcher: ready !== undefined };
      const options = bwrapOptions(host, spec, identity, system, how);
      const mark = shape.report ? spec.endMark : undefined;
      const argv = buildBwrapArgs(spec, options);
      started = ready
        ? ready.launch(argv, seccomp, limits, ulimitArgs(rlimitsFor(spec, options)), mark)
        : startDirect(argv, shape, seccomp, cgroup, mark, spec.hostDirFd);
    } catch (error) {
      system.etc?.release();
      throw error;
    }
    return this.wrap(started.child, { cgroup, held: system.etc, lease, alone: false, report: shape.report });
  }
}

/**
 * A run's stdio shape, as spawn() decides it: the reporting drop program's channel only where it
 * reports (a root server's one-shot run with the drop program in its /etc copy).
 */
function shapeOf(spec: SandboxSpec, identity: Identity | undefined, drop: string | undefined): Shape {
  const report = reportsEnd(spec, { ...(identity && { identity }), ...(drop && { drop }) });
  return { stdin: spec.stdin, control: spec.control === true, report };
}

/** Whether bwrap binds the spec's host directory by its descriptor (a root server's). */
function bindsHostDir(spec: SandboxSpec): boolean {
  return spec.hostDirFd !== undefined;
}

function bwrapOptions(
  host: HostSetup,
  spec: SandboxSpec,
  identity: Identity | undefined,
  system: SandboxSystem,
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
    ...(system.views && { views: system.views }),
  };
}

/**
 * What a zygote needs to build the run's sandbox and confine the program's process in it
 * (drivers/zygote.py): bwrap keeps up the same sandbox a cold run gets, around a placeholder; or
 * the nest makes it from a template (nest.ts), where the run has no egress forwarder to start.
 */
function zygoteSandbox(
  spec: SandboxSpec,
  options: BwrapOptions,
  identity: Identity,
  cat: string,
  execs: boolean,
): ZygoteSandbox {
  const placeholder = [cat, '/proc/sys/kernel/ostype', '-'];
  // The interpreter's install stays visible, as in a cold run: its stdlib, sys.executable.
  const interpreter = interpreterMount(spec.argv[0] as string, options.privateDirs);
  const sandbox = { ...spec, argv: placeholder, readablePaths: [interpreter, ...spec.readablePaths] };
  // The zygote appends the placeholder: its own where it can run one (drivers/zygote.py), or this.
  // One plan for both: the nest's, and bwrap's where the template cannot be used.
  const ops = filesystemOps(sandbox, options, true);
  const bwrap = buildBwrapArgs(sandbox, { ...options, placeholder: true }, ops).slice(0, -placeholder.length);
  const { uid, gid } = identity;
  const nest = NEST && !forwards(spec) ? nestPlan(NEST, ops, spec.network !== 'host') : undefined;
  const exec = execs ? { exec: spec.argv } : {};
  return { bwrap, placeholder, ...(nest && { nest }), uid, gid, env: spec.env, cwd: spec.cwd, ...exec };
}
