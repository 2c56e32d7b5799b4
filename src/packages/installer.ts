import { constants } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Config } from '../config/index.js';
import { type CommandResult, runCommand, sandboxSpec } from '../engine/index.js';
import { SandboxUnavailableError } from '../errors/index.js';
import { type SecretsFilter, sandboxEnv } from '../policy/index.js';
import type { Interpreters } from '../runtimes/index.js';
import { type SandboxBackend, type SandboxSpec, SubprocessBackend } from '../sandbox/index.js';
import { listBeneath, openBeneath, readUpTo } from '../util/index.js';
import { installerEnvAdditions, npmInstallArgv, pipInstallArgv } from './commands.js';
import { importCheckStep, importFailure, installedModules } from './imports.js';
import { openPackageNetwork } from './network.js';
import { type NpmConfigAnswer, readNpmConfigFiles } from './npm-config.js';
import type { PackageLanguage, PackageSpec } from './spec.js';
import { hasInstallScripts, PLACE_SCRIPT } from './stage.js';

/** Where one environment's packages go: pip `--target` dir, or npm `--prefix` dir. */
export interface PackageEnv {
  readonly language: PackageLanguage;
  /** `root` joined with `rel`. */
  readonly dir: string;
  /**
   * The directory that holds the environment and that code cannot replace (a session's workspace,
   * the global envs dir): the one bound into the sandbox that places an install. Nothing beneath
   * it is ever resolved by the host: a session may have made `.packages` a link anywhere.
   */
  readonly root: string;
  /** The environment's directory relative to `root` ("" for the root itself). */
  readonly rel: string;
  /**
   * Install with this backend's interpreter instead of the host's (a docker-mode session: its
   * image's pip or npm, in a container beside it with `workspace` mounted as in the session).
   */
  readonly sandbox?: { readonly backend: SandboxBackend; readonly workspace: string };
  /** Package directories code sees after this one (a session's: the global environment). */
  readonly beside?: readonly string[];
}

export interface InstallResult {
  readonly success: boolean;
  readonly package: string;
  readonly version: string | null;
  readonly install_output: string;
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly duration_ms: number;
  /** CODEXEC_NETWORK=allowlist: hosts the egress proxy refused the package code (network.ts). */
  readonly network_denied?: Array<{ host: string; port: number }>;
}

/**
 * Runs pip or npm for one package (installers never read a file code can write, and never run a
 * package's code on the host: either would let code act with the server's rights):
 * 1. on the host, as the operator's own pip / npm would (their config files, caches, CA and proxy
 *    settings), in a fresh empty directory outside every workspace, installing into it: wheels
 *    only (`--only-binary :all:`: building an sdist runs its code) and npm with `--ignore-scripts`.
 *    No package code runs in it, so it keeps the operator's network whatever CODEXEC_NETWORK says
 *    (the egress allowlist confines code, not the operator's own installer);
 * 2. where npm staged packages with install scripts, `npm rebuild` runs those in the code sandbox
 *    (as the sandbox's uid; the host's network, or under the allowlist a lane of their own:
 *    network.ts);
 * 3. the result is copied into the environment by a process in the code sandbox (stage.ts), so a
 *    session's directory, which its code controls, is written only by the sandbox's uid.
 * A docker-mode session's installer (its image's pip or npm) runs package code as it installs: it
 * gets step 2's network. Timeout, bounded output and argv arrays (never a shell for the
 * installers) at every step.
 * Installs into one environment are serialized.
 */
export class PackageInstaller {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly host = new SubprocessBackend();
  private npmConfigAnswer: Promise<NpmConfigAnswer> | undefined;

  constructor(
    private readonly config: Config,
    private readonly interpreters: Interpreters,
    /** The code sandbox that runs packages' install scripts and places results (namespace mode). */
    private readonly sandbox: () => Promise<SandboxBackend>,
    /** Masks secrets in the installer's output (a registry token in an error, say). */
    private readonly secrets?: SecretsFilter,
    private readonly hostEnv: NodeJS.ProcessEnv = process.env,
  ) {}

  /** `signal` stops the install: its running step is killed (with all it started), none follows. */
  install(env: PackageEnv, pkg: PackageSpec, signal?: AbortSignal): Promise<InstallResult> {
    const previous = this.queues.get(env.dir) ?? Promise.resolve();
    const run = previous.then(() => this.run(env, pkg, signal));
    this.queues.set(
      env.dir,
      run.catch(() => {}),
    );
    return run;
  }

  private async run(env: PackageEnv, pkg: PackageSpec, signal?: AbortSignal): Promise<InstallResult> {
    const started = Date.now();
    await mkdir(join(this.config.runHome, 'tmp'), { recursive: true, mode: 0o700 });
    const stage = await mkdtemp(join(this.config.runHome, 'tmp', 'install-'));
    try {
      if (env.sandbox) return await this.inContainer(env, pkg, started, stage, signal);
      const out = join(stage, 'out');
      const processEnv = sandboxEnv(this.hostEnv, installerEnvAdditions(this.hostEnv));
      let argv: string[];
      if (env.language === 'python') {
        argv = pipInstallArgv(await this.interpreters.get('python'), out, pkg.spec);
      } else {
        const npm = await this.npm();
        const config = await this.npmConfig(npm, processEnv, stage);
        if (!config.ok) return failedBeforeStart(pkg, config.output, started);
        argv = npmInstallArgv(npm, out, config.files, pkg.spec);
      }
      const steps = [
        await this.step(
          this.host,
          { argv, cwd: stage, env: processEnv, writable: [stage], network: 'host' },
          signal,
        ),
      ];
      let denied: InstallResult['network_denied'];
      if (exitedWell(steps) && env.language === 'node' && (await hasInstallScripts(out))) {
        const npm = await this.npm();
        const home = join(stage, 'home');
        await mkdir(home);
        const rebuild = [npm, 'rebuild', '--prefix', out, '--no-audit', '--no-fund', '--no-update-notifier'];
        const scriptEnv = { ...processEnv, HOME: home, TMPDIR: home };
        // Without npm's hidden lockfile, rebuild reads each package's own scripts (the lockfile
        // keeps the registry's word on which have any).
        await rm(join(out, 'node_modules', '.package-lock.json'), { force: true });
        const ran = await this.packageStep(
          await this.sandbox(),
          { argv: rebuild, cwd: out, env: scriptEnv, writable: [stage], readable: [dirname(npm)] },
          stage,
          signal,
        );
        steps.push(ran.step);
        denied = ran.denied;
      }
      if (exitedWell(steps)) {
        // cwd at the root: the copy runs as the uid that has it (a session's), see ownership.ts.
        await mkdir(env.root, { recursive: true }); // the global envs' own; a session's exists
        const place = ['/bin/sh', '-c', PLACE_SCRIPT[env.language], 'sh', out, env.dir];
        const placing = {
          argv: place,
          cwd: env.root,
          env: processEnv,
          writable: [env.root],
          readable: [out],
        };
        steps.push(await this.step(await this.sandbox(), { ...placing, network: 'none' }, signal));
      }
      const imported =
        exitedWell(steps) &&
        env.language === 'python' &&
        (await this.importCheck(env, pkg, out, stage, signal));
      const result = await this.result(env, pkg, steps, started);
      return {
        ...(imported ? importFailure(result, imported) : result),
        ...(denied && { network_denied: denied }),
      };
    } finally {
      await rm(stage, { recursive: true, force: true }).catch(() => {});
    }
  }

  /**
   * The package imported where code will import it (its environment before the system's
   * site-packages, in the code sandbox: importing runs its code); undefined where it names no
   * module to import.
   */
  private async importCheck(
    env: PackageEnv,
    pkg: PackageSpec,
    out: string,
    stage: string,
    signal: AbortSignal | undefined,
  ): Promise<CommandResult | undefined> {
    const modules = await installedModules(out, pkg.name);
    if (modules.length === 0) return undefined;
    const python = await this.interpreters.get('python');
    const check = importCheckStep({ env, modules, python, stage, hostEnv: this.hostEnv });
    return this.step(await this.sandbox(), { ...check, network: 'none' }, signal);
  }

  /**
   * A docker-mode session: its image's pip or npm, in a container beside it with the session's
   * workspace as its own, so everything runs as the container's user inside it.
   */
  private async inContainer(
    env: PackageEnv,
    pkg: PackageSpec,
    started: number,
    stage: string,
    signal: AbortSignal | undefined,
  ): Promise<InstallResult> {
    const sandbox = env.sandbox as NonNullable<PackageEnv['sandbox']>;
    const processEnv = { ...sandboxEnv(this.hostEnv, installerEnvAdditions(this.hostEnv)), HOME: '/tmp' };
    let argv: string[];
    if (env.language === 'python') {
      argv = pipInstallArgv(await this.interpreters.get('python'), env.dir, pkg.spec);
    } else {
      const npm = await this.npm();
      const config = await this.npmConfig(npm, processEnv, stage);
      if (!config.ok) return failedBeforeStart(pkg, config.output, started);
      argv = npmInstallArgv(npm, env.dir, config.files, pkg.spec);
    }
    // The lane's socket goes in the stage: the session's own lane has the workspace's name.
    const { step, denied } = await this.packageStep(
      sandbox.backend,
      { argv, cwd: sandbox.workspace, env: processEnv, writable: [sandbox.workspace] },
      stage,
      signal,
    );
    return { ...(await this.result(env, pkg, [step], started)), ...(denied && { network_denied: denied }) };
  }

  /**
   * A step that runs package code, on the network of such steps (network.ts): under the allowlist
   * through a lane of its own whose socket lies in `laneDir` (made writable for the step), closed
   * when the step ends.
   */
  private async packageStep(
    backend: SandboxBackend,
    step: Step,
    laneDir: string,
    signal: AbortSignal | undefined,
  ): Promise<{ step: CommandResult; denied: InstallResult['network_denied'] }> {
    const python = () => this.interpreters.get('python');
    const network = await openPackageNetwork(this.config, backend.capabilities.egress, laneDir, python);
    try {
      // The spec builder makes the lane's socket directory writable where it is not already.
      const ran = await this.step(backend, { ...step, env: network.env(step.env), ...network.spec }, signal);
      return { step: ran, denied: network.denied() };
    } finally {
      await network.close();
    }
  }

  private step(
    backend: SandboxBackend,
    step: Step & Pick<SandboxSpec, 'network' | 'egress'>,
    signal: AbortSignal | undefined,
  ): Promise<CommandResult> {
    return runCommand(backend, sandboxSpec({ ...step, limits: this.config.limits }), {
      timeoutMs: this.config.installTimeoutMs,
      killGraceMs: this.config.killGraceMs,
      output: this.config.output,
      secrets: this.secrets,
      signal,
    });
  }

  private async result(
    env: PackageEnv,
    pkg: PackageSpec,
    steps: CommandResult[],
    started: number,
  ): Promise<InstallResult> {
    const last = steps[steps.length - 1] as CommandResult;
    const success = exitedWell(steps);
    const output = steps
      .flatMap((step) => [step.stdout, step.stderr])
      .filter(Boolean)
      .join('\n')
      .trim();
    return {
      success,
      package: pkg.name,
      version: success ? await installedVersion(env, pkg.name) : null,
      install_output: success || env.language !== 'python' ? output : withWheelHint(output),
      exit_code: last.exit_code,
      timed_out: steps.some((step) => step.timed_out),
      duration_ms: Date.now() - started,
    };
  }

  /** Asked once per server: the operator's config files do not move while it runs. */
  private npmConfig(npm: string, env: Record<string, string>, cwd: string): Promise<NpmConfigAnswer> {
    this.npmConfigAnswer ??= readNpmConfigFiles(npm, env, cwd).then((answer) => {
      if (!answer.ok) this.npmConfigAnswer = undefined; // a fixed npmrc is seen by the next install
      return answer;
    });
    return this.npmConfigAnswer;
  }

  private async npm(): Promise<string> {
    // npm sits beside the node that runs codexec in every standard install.
    const candidate = join(process.execPath, '..', 'npm');
    try {
      await readFile(candidate);
      return candidate;
    } catch {
      throw new SandboxUnavailableError('npm was not found next to node; install npm to add node packages');
    }
  }
}

/** One step's program: what it runs, where, with what it may write and read. */
interface Step {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly writable: readonly string[];
  readonly readable?: readonly string[];
}

function failedBeforeStart(pkg: PackageSpec, output: string, started: number): InstallResult {
  return {
    success: false,
    package: pkg.name,
    version: null,
    install_output: output,
    exit_code: null,
    timed_out: false,
    duration_ms: Date.now() - started,
  };
}

/** The version that actually landed, read from the installed metadata (beneath the root). */
async function installedVersion(env: PackageEnv, name: string): Promise<string | null> {
  if (env.language === 'node') {
    const manifest = await readBeneath(env.root, join(env.rel, 'node_modules', name, 'package.json'));
    const parsed = (manifest && safeJson(manifest)) as { version?: unknown } | undefined;
    return typeof parsed?.version === 'string' ? parsed.version : null;
  }
  const wanted = name.toLowerCase().replace(/[-_.]+/g, '_');
  for (const entry of listBeneath(env.root, env.rel)) {
    const match = /^(.+)-([^-]+)\.dist-info$/.exec(entry);
    if (match?.[1] && match[2] && match[1].toLowerCase().replace(/[-_.]+/g, '_') === wanted) return match[2];
  }
  return null;
}

/** A package.json past this is not one an install wrote: its version is not read. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

async function readBeneath(root: string, path: string): Promise<string | undefined> {
  try {
    const handle = await openBeneath(root, path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      if (!(await handle.stat()).isFile()) return undefined;
      // Package code wrote this file and may still be growing it: read a bounded amount.
      const { data, over } = await readUpTo(handle, MAX_MANIFEST_BYTES);
      return over ? undefined : data.toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function exitedWell(steps: readonly CommandResult[]): boolean {
  return steps.every((step) => step.exit_code === 0);
}

/** pip's refusal of an sdist under --only-binary, explained. */
function withWheelHint(output: string): string {
  if (!/no matching distribution|only-binary|binary/i.test(output)) return output;
  return (
    `${output}\n\ncodexec installs wheels only: building a package from source runs its code, which ` +
    'codexec never does on the host. Install it yourself outside codexec if you trust it.'
  );
}
