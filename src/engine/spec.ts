import { existsSync } from 'node:fs';
import { symlink } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { type Config, commandWorkspace, globalPackageDirs } from '../config/index.js';
import type { InterpreterKind } from '../runtimes/index.js';
import type { Capabilities, EgressEndpoint, SandboxSpec } from '../sandbox/index.js';
import { currentPrincipal, type HeldDir, LOCAL_PRINCIPAL } from '../util/index.js';
import { figureEnv, PYTHON_SUPPORT_FILES } from './images.js';
import type { HeldMounts } from './mounts.js';
import { codeEnv, sandboxSpec } from './sandbox-spec.js';

export interface RunSpecInput {
  readonly config: Config;
  /** Whose global packages the run sees; default the request's (a warm process: the local one's). */
  readonly principal?: string;
  readonly hostEnv: NodeJS.ProcessEnv;
  readonly kind: InterpreterKind;
  /** The runtime's own variables (e.g. PYTHONUNBUFFERED). */
  readonly runtimeEnv: Readonly<Record<string, string>>;
  readonly argv: readonly string[];
  readonly execDir: string;
  readonly cwd: string;
  /** The caller's working directory, when the run has one (cwd is its path). */
  readonly held?: HeldDir | undefined;
  /** Files the program must read besides the workspace (the script, a driver). */
  readonly files: readonly string[];
  readonly timeoutMs: number;
  readonly control?: boolean;
  /** What the backend gives code: a home of its own (the workspace then) or the host's. */
  readonly capabilities: Pick<Capabilities, 'ownHome'>;
  /** Directories put first on PATH (execute_command's .venv/bin). */
  readonly pathPrefix?: readonly string[] | undefined;
  /** execute_command's run: it shares the principal's persistent sandbox where the backend keeps one. */
  readonly command?: boolean;
  /** The egress allowlist: where the sandbox reaches the proxy (its variables are in runtimeEnv). */
  readonly egress?: EgressEndpoint | undefined;
  /** The operator's mounts of the principal. */
  readonly mounts?: HeldMounts | undefined;
}

/** The SandboxSpec of one run: stripped env, workspace, global packages, limits. */
export async function buildRunSpec(input: RunSpecInput): Promise<SandboxSpec> {
  const { config, cwd, execDir } = input;
  const packages = await globalPackages(config, input.kind, execDir, input.principal);
  const env: Record<string, string> = { ...input.runtimeEnv, ...packages.env };
  // The script lives outside a custom working dir; keep that dir importable as `python -c` would.
  if (input.kind === 'python' && cwd !== execDir)
    env.PYTHONPATH = [cwd, env.PYTHONPATH].filter(Boolean).join(':');
  if (input.kind === 'python') Object.assign(env, figureEnv(execDir, env.PYTHONPATH));
  const runEnv = codeEnv(input.capabilities, input.hostEnv, env, execDir);
  if (input.pathPrefix?.length) runEnv.PATH = [...input.pathPrefix, runEnv.PATH].filter(Boolean).join(':');
  return sandboxSpec({
    argv: input.argv,
    cwd,
    env: runEnv,
    // A directory beneath the command workspace: the workspace is bound, never this path (HeldDir.within).
    writable: [execDir, input.held?.within ?? cwd],
    readable: [
      ...input.files,
      ...packages.readable,
      ...(input.kind === 'python' ? PYTHON_SUPPORT_FILES : []),
    ],
    limits: { ...config.limits, cpuSeconds: cpuBackstop(input.timeoutMs, config.killGraceMs) },
    network: config.network,
    egress: input.egress,
    control: input.control,
    held: input.held,
    mounts: input.mounts?.of(input.principal ?? currentPrincipal()),
    // A host directory's run is its owner's: never in the principal's shared command sandbox.
    persistent:
      input.command && !input.held?.host
        ? { key: `command:${currentPrincipal()}`, mounts: [commandWorkspace(config, currentPrincipal())] }
        : undefined,
  });
}

/** The limits a run's notes name: a backend whose memory bound is a setting of its own names that. */
export function namedLimits(config: Config, capabilities: Capabilities) {
  const { memorySetting } = capabilities;
  return memorySetting ? { ...config.limits, memorySetting } : config.limits;
}

const CPUS = availableParallelism();

/**
 * CPU seconds per process (the namespace backend's RLIMIT_CPU): a backstop for when the wall clock
 * cannot act (a stopped or hung server), never a limit before it. One process's threads use up to
 * a second of CPU per CPU each second, so the timeout alone would kill multi-threaded code early
 * (with SIGKILL, as soft and hard limits are equal, and no reason given).
 */
function cpuBackstop(timeoutMs: number, killGraceMs: number): number {
  return Math.ceil(((timeoutMs + killGraceMs) / 1000) * CPUS) + 1;
}

export interface PackageAccess {
  readonly env: Record<string, string>;
  readonly readable: string[];
}

/**
 * Whether a warm process (started with the local principal's global packages and mounts) shows
 * `principal` exactly the packages and mounts its own run would: the local principal, or one with
 * the same mounts where neither has packages of `kind`.
 */
export function warmFits(
  config: Pick<Config, 'envsDir' | 'runHome'>,
  kind: InterpreterKind,
  principal: string,
  mounts?: HeldMounts,
): boolean {
  if (principal === LOCAL_PRINCIPAL) return true;
  // Its sandbox holds the local principal's mounts.
  if (mounts && !mounts.same(principal, LOCAL_PRINCIPAL)) return false;
  if (kind === 'bash') return true;
  const dirs = (who: string) => globalPackageDirs(config, who);
  const of = (who: string) => (kind === 'python' ? dirs(who).python : dirs(who).nodeModules);
  // Stats on the calling thread: µs.
  return !existsSync(of(principal)) && !existsSync(of(LOCAL_PRINCIPAL));
}

/**
 * Make the global package environment (install_package without a session) visible to a run:
 * PYTHONPATH for Python; for Node a `node_modules` link in the workspace beside the script, which
 * both `import` and `require` resolve, plus NODE_PATH.
 */
export async function globalPackages(
  config: Pick<Config, 'envsDir' | 'runHome'>,
  kind: InterpreterKind,
  execDir: string,
  principal: string = currentPrincipal(),
): Promise<PackageAccess> {
  const none: PackageAccess = { env: {}, readable: [] };
  if (kind === 'python') {
    const dir = globalPackageDirs(config, principal).python;
    // A stat on the calling thread: the thread pool's round trip costs more than the call.
    return existsSync(dir) ? { env: { CODEXEC_PYTHON_PACKAGES: dir }, readable: [dir] } : none;
  }
  if (kind === 'node') {
    const dir = globalPackageDirs(config, principal).nodeModules;
    if (!existsSync(dir)) return none;
    await symlink(dir, join(execDir, 'node_modules'), 'dir').catch(() => {});
    return { env: { NODE_PATH: dir }, readable: [dir] };
  }
  return none;
}
