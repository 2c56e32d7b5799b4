import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { runCommand } from '../engine/index.js';
import { SandboxUnavailableError } from '../errors/index.js';
import { type SecretsFilter, sandboxEnv } from '../policy/index.js';
import type { Interpreters } from '../runtimes/index.js';
import { type SandboxBackend, SubprocessBackend } from '../sandbox/index.js';
import { installerEnvAdditions, npmInstallArgv, pipInstallArgv } from './commands.js';
import { type NpmConfigAnswer, readNpmConfigFiles } from './npm-config.js';
import type { PackageLanguage, PackageSpec } from './spec.js';

/** Where one environment's packages go: pip `--target` dir, or npm `--prefix` dir. */
export interface PackageEnv {
  readonly language: PackageLanguage;
  readonly dir: string;
  /**
   * Install with this backend's interpreter instead of the host's (a docker-mode session: its
   * image's pip or npm, in a container beside it with `workspace` mounted as in the session).
   */
  readonly sandbox?: { readonly backend: SandboxBackend; readonly workspace: string };
}

export interface InstallResult {
  readonly success: boolean;
  readonly package: string;
  readonly version: string | null;
  readonly install_output: string;
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly duration_ms: number;
}

/**
 * Runs pip or npm for one package. Installs need the network even when code runs offline, so
 * they run outside the code sandbox, with the stripped environment plus the operator's
 * package-manager settings (commands.ts), a timeout, bounded output, and an argv array (never a
 * shell). Installs into one environment are serialized.
 */
export class PackageInstaller {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly backend = new SubprocessBackend();
  private npmConfigAnswer: Promise<NpmConfigAnswer> | undefined;

  constructor(
    private readonly config: Config,
    private readonly interpreters: Interpreters,
    /** Masks secrets in the installer's output (a registry token in an error, say). */
    private readonly secrets?: SecretsFilter,
    private readonly hostEnv: NodeJS.ProcessEnv = process.env,
  ) {}

  install(env: PackageEnv, pkg: PackageSpec): Promise<InstallResult> {
    const previous = this.queues.get(env.dir) ?? Promise.resolve();
    const run = previous.then(() => this.run(env, pkg));
    this.queues.set(
      env.dir,
      run.catch(() => {}),
    );
    return run;
  }

  private async run(env: PackageEnv, pkg: PackageSpec): Promise<InstallResult> {
    await mkdir(env.dir, { recursive: true });
    const started = Date.now();
    const processEnv = sandboxEnv(this.hostEnv, installerEnvAdditions(this.hostEnv));
    let argv: string[];
    if (env.language === 'python') {
      argv = pipInstallArgv(await this.interpreters.get('python'), env.dir, pkg.spec);
    } else {
      const npm = await this.npm();
      const config = await this.npmConfig(npm, processEnv, env.dir);
      if (!config.ok) return failedBeforeStart(pkg, config.output, started);
      argv = npmInstallArgv(npm, env.dir, config.files, pkg.spec);
    }
    // The installer reaches the registry as the operator's own would (host network), whatever
    // network the code gets; in a container the caches go to its /tmp.
    const result = await runCommand(
      env.sandbox?.backend ?? this.backend,
      {
        argv,
        cwd: env.dir,
        env: env.sandbox ? { ...processEnv, HOME: '/tmp' } : processEnv,
        writablePaths: env.sandbox ? [env.sandbox.workspace] : [env.dir],
        readablePaths: [],
        limits: this.config.limits,
        network: 'host',
        stdin: 'ignore',
      },
      {
        timeoutMs: this.config.installTimeoutMs,
        killGraceMs: this.config.killGraceMs,
        output: this.config.output,
        secrets: this.secrets,
      },
    );
    const success = result.exit_code === 0;
    const output = [result.stdout, result.stderr].filter(Boolean).join('\n').trim();
    return {
      success,
      package: pkg.name,
      version: success ? await installedVersion(env, pkg.name) : null,
      install_output: output,
      exit_code: result.exit_code,
      timed_out: result.timed_out,
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

/** The version that actually landed, read from the installed metadata. */
async function installedVersion(env: PackageEnv, name: string): Promise<string | null> {
  if (env.language === 'node') {
    const manifest = await readFile(join(env.dir, 'node_modules', name, 'package.json'), 'utf8').catch(
      () => null,
    );
    return manifest ? ((JSON.parse(manifest) as { version?: string }).version ?? null) : null;
  }
  const wanted = name.toLowerCase().replace(/[-_.]+/g, '_');
  for (const entry of await readdir(env.dir)) {
    const match = /^(.+)-([^-]+)\.dist-info$/.exec(entry);
    if (match?.[1] && match[2] && match[1].toLowerCase().replace(/[-_.]+/g, '_') === wanted) return match[2];
  }
  return null;
}
