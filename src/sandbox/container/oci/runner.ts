// Sandbox mode docker's one-shot runs without the engine on their path: each is started by the OCI
// runtime itself (runc, crun, or gVisor's runsc) from a bundle written here (bundle.ts) over the
// template's configuration and root (template.ts). The engine keeps images and the template;
// starting and removing a container costs the runtime alone (~0.1 s of the engine's CPU saved
// each way). The runtime's state lies under /run/codexec/oci/<server>, with an owner file naming
// the server: a watcher removes a server's containers when it is gone (as the engine's reaper
// does), and a server that starts removes what dead servers left there.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { log, quietly } from '../../../util/index.js';
import { ensureRootDir, findOnPath, rootOnly, Watcher } from '../../host/index.js';
import { LIMIT_NOTE, type SandboxSpec } from '../../types.js';
import {
  type ContainerRun,
  containerProcess,
  lingers,
  mountsFor,
  pathMapper,
  processLimits,
} from '../args.js';
import type { ControlListener } from '../control.js';
import type { ContainerEngine } from '../engine.js';
import { engineCwd } from '../engine-cwd.js';
import type { Handle } from '../process.js';
import { processStart } from '../reaper.js';
import { isGvisor } from '../runtime.js';
import { bundleConfig, fitsTemplate } from './bundle.js';
import type { Template } from './template.js';

const exec = promisify(execFile);
/** Every server's runtime state, one directory each. */
export const STATE_BASE = '/run/codexec/oci';
/** How long a runtime command (kill, delete, state) may take. */
const COMMAND_MS = 30_000;

const ownerSchema = z.object({
  pid: z.number().int().positive(),
  started: z.string(),
  /** The runtime's binary and how it was told to manage cgroups: to remove what the server left. */
  runtime: z.string().startsWith('/'),
  systemd: z.boolean(),
});

/** The runtime's command line before its subcommand: gVisor's own options, the cgroup manager, the state. */
function runtimeCli(runtime: string, state: string, systemd: boolean): string[] {
  return [
    runtime,
    ...(isGvisor(runtime) ? ['--host-uds=open', '--network=none'] : []),
    ...(systemd ? ['--systemd-cgroup'] : []),
    '--root',
    state,
  ];
}

/** Runtimes a dead server's owner file may name: only these are run, and only root's own files. */
const KNOWN_RUNTIME = /^(runc|crun|runsc[\w.-]*)$/;
type Owner = z.infer<typeof ownerSchema>;

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The OCI runtime to start runs with: CODEXEC_DOCKER_RUNTIME, else runc, else crun; undefined: none. */
export function ociRuntime(engine: Pick<ContainerEngine, 'runtime'>): string | undefined {
  const named = engine.runtime ?? (findOnPath('runc') ? 'runc' : 'crun');
  return named.startsWith('/') ? named : findOnPath(named);
}

export class OciRunner {
  private readonly dir: string;
  private readonly state: string;
  /** The runtime and its global options (`--root` included). */
  private readonly cli: readonly string[];
  private readonly reaper: Watcher;
  private readonly live = new Set<string>();
  private readonly gvisor: boolean;
  /** The template's seccomp profile (oci/seccomp.ts), for the engine's containers (`--security-opt`). */
  readonly seccompProfile: string;

  constructor(
    /** The runtime's binary. */
    readonly runtime: string,
    serverId: string,
    readonly template: Template,
  ) {
    this.gvisor = isGvisor(runtime);
    this.dir = join(STATE_BASE, serverId);
    this.state = join(this.dir, 'state');
    const systemd = template.config.linux.cgroupsPath?.includes(':') ?? false;
    this.cli = runtimeCli(runtime, this.state, systemd);
    // Bundles say how a container is confined: every directory to them is this user's alone.
    ensureRootDir(STATE_BASE, 'the OCI runtime state and bundles');
    mkdirSync(this.dir, { mode: 0o700 });
    mkdirSync(join(this.dir, 'bundles'), { mode: 0o700 });
    // The binary itself (not a link to it): the sweep runs only a root-owned file of a known name.
    const binary = realpathSync(runtime);
    const owner: Owner = { pid: process.pid, started: processStart() ?? '', runtime: binary, systemd };
    writeFileSync(join(this.dir, 'owner'), JSON.stringify(owner));
    this.seccompProfile = join(this.dir, 'seccomp.json');
    writeFileSync(this.seccompProfile, JSON.stringify(template.config.linux.seccomp));
    this.reaper = new Watcher({
      // The directory's name is hex (the server's id): safe to quote into the script.
      script: `for name in "\${!names[@]}"; do "$@" "$name" >/dev/null 2>&1; done; rm -rf -- '${this.dir}'`,
      args: [...this.cli, 'delete', '--force'],
      what: 'OCI container reaper',
      env: process.env,
      detached: true,
    });
  }

  /**
   * Whether a spec's container starts here: a one-shot run's (cold or warm; a session's stays with
   * the engine, whose start it pays once), no network but its own, mounts the template fits.
   */
  takes(spec: SandboxSpec, network: string): boolean {
    return spec.stdin === 'ignore' && network === 'none' && fitsTemplate(mountsFor(spec));
  }

  /** Start a spec's container of its own; `run` names the image, wrapper and launcher. */
  start(
    name: string,
    spec: SandboxSpec,
    container: Pick<ContainerRun, 'image' | 'wrapper' | 'controlLauncher' | 'user'>,
    control: ControlListener | undefined,
  ): Handle {
    const { mounts, cwd, env, argv } = containerProcess(spec, container, lingers(spec) ? 'warm' : 'run');
    const { pids, nproc } = processLimits(spec.limits.maxProcs, this.gvisor);
    const config = bundleConfig(this.template.config, this.template.init, {
      argv,
      env,
      cwd,
      user: container.user,
      mounts,
      cgroupsPath: this.cgroupsPath(name),
      pids,
      rlimits: { nproc, fsize: spec.limits.maxFileMb * 1024 * 1024 },
    });
    const bundle = join(this.dir, 'bundles', name);
    mkdirSync(bundle, { mode: 0o700 });
    writeFileSync(join(bundle, 'config.json'), JSON.stringify(config));
    this.reaper.watch(name);
    this.live.add(name);
    const [binary = '', ...options] = this.cli;
    const workspace = spec.writablePaths[0] ?? spec.cwd;
    // Never the host's /dev/null as the container's stdin: runsc (and crun before 1.24) chown their
    // stdio to the container's user, which would hand the host's /dev/null to the sandbox's uid.
    // A pipe closed at once reads as /dev/null does: end of file.
    const child = spawn(binary, [...options, 'run', '--bundle', bundle, name], {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: engineCwd(),
      // The sweep of dead servers' workspaces keeps those a live process names (pool/sweep.ts):
      // an engine names its mounts on its command line, the runtime here in its environment.
      env: { ...process.env, CODEXEC_WORKSPACE: workspace },
    });
    if (spec.stdin !== 'pipe') child.stdin?.end();
    return {
      child,
      control,
      ownContainer: true,
      limitNote: join(workspace, LIMIT_NOTE),
      insidePath: pathMapper(mounts),
      signal: (signal) => void this.command(['kill', name, signal.replace(/^SIG/, '')]).catch(() => {}),
      hostPid: async () => {
        const said = await this.command(['state', name]).catch(() => ({ stdout: '{}' }));
        const pid = Number((JSON.parse(said.stdout) as { pid?: unknown }).pid);
        return pid > 0 ? pid : undefined;
      },
      // Its wrapper ends every process of it with the program (container_init.sh, mode "warm").
      lingers: lingers(spec),
      cleanUp: (exited) => this.remove(name, child, exited),
    };
  }

  /** Remove what is left of the server's containers, and its state. */
  async close(): Promise<void> {
    await Promise.all(
      [...this.live].map((name) => this.command(['delete', '--force', name]).catch(() => {})),
    );
    quietly(() => rmSync(this.dir, { recursive: true, force: true }));
  }

  /** A run's cgroup beside the template's, in the engine's way of naming it (cgroupfs or systemd's). */
  private cgroupsPath(name: string): string {
    const path = this.template.config.linux.cgroupsPath ?? '/codexec';
    if (path.includes(':')) return `${path.split(':')[0]}:codexec:${name}`;
    return join(dirname(path), name);
  }

  /** Once `run` has exited the runtime has removed the container; else it is told to, and waited for. */
  private async remove(name: string, child: ChildProcess, exited: () => boolean): Promise<void> {
    if (!exited()) {
      const gone = once(child, 'exit').catch(() => {});
      await this.command(['delete', '--force', name]).catch(() => {});
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, COMMAND_MS).unref())]);
    }
    quietly(() => rmSync(join(this.dir, 'bundles', name), { recursive: true, force: true }));
    this.live.delete(name);
    this.reaper.release(name);
  }

  private command(args: readonly string[]): Promise<{ stdout: string }> {
    const [binary = '', ...options] = this.cli;
    return exec(binary, [...options, ...args], { timeout: COMMAND_MS });
  }
}

/** Remove the containers and state that servers now gone left under STATE_BASE. */
export async function sweepDeadRunners(): Promise<void> {
  const dirs = (() => {
    try {
      return readdirSync(STATE_BASE);
    } catch {
      return [];
    }
  })();
  for (const entry of dirs) {
    const dir = join(STATE_BASE, entry);
    const file = join(dir, 'owner');
    // The owner names a program to run: only a file that root alone could write.
    if (![dirname(STATE_BASE), STATE_BASE, dir, file].every(rootOnly)) continue;
    const owner = ownerSchema.safeParse(readJson(file));
    if (!owner.success) continue; // being written
    const { pid, started, runtime, systemd } = owner.data;
    if (processStart(pid) === started) continue;
    // The binary and the directory it lies in: a root-owned file in a directory another user
    // may write could be swapped between this check and its run.
    if (!KNOWN_RUNTIME.test(basename(runtime)) || ![runtime, dirname(runtime)].every(rootOnly)) continue;
    const [binary = '', ...options] = runtimeCli(runtime, join(dir, 'state'), systemd);
    try {
      const { stdout } = await exec(binary, [...options, 'list', '--quiet'], { timeout: COMMAND_MS });
      for (const name of stdout.split('\n').filter(Boolean))
        await exec(binary, [...options, 'delete', '--force', name], { timeout: COMMAND_MS }).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      log(
        'warn',
        `could not remove the OCI containers of a stopped server (${dir}): ${(error as Error).message}`,
      );
    }
  }
}
