import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { runCommand } from '../engine/index.js';
import { SandboxUnavailableError } from '../errors/index.js';
import { sandboxEnv } from '../policy/index.js';
import type { Interpreters } from '../runtimes/index.js';
import { SubprocessBackend } from '../sandbox/index.js';
import type { PackageLanguage, PackageSpec } from './spec.js';

/** Where one environment's packages go: pip `--target` dir, or npm `--prefix` dir. */
export interface PackageEnv {
  readonly language: PackageLanguage;
  readonly dir: string;
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

// Registry settings (a mirror, a private index, offline wheels), proxies and CA bundles reach the
// installer — it is trusted code that must reach the registry the way the operator's tools do.
// Nothing else from the server's environment does.
const INSTALLER_ENV =
  /^(PIP_\w+|npm_config_\w+|NPM_CONFIG_\w+|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy)$/;

/**
 * Runs pip or npm for one package. Installs need the network even when code runs offline, so
 * they run outside the code sandbox, but with the stripped environment, a timeout, bounded output,
 * and an argv array (never a shell). Installs into one environment are serialized.
 */
export class PackageInstaller {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly backend = new SubprocessBackend();

  constructor(
    private readonly config: Config,
    private readonly interpreters: Interpreters,
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
    const argv =
      env.language === 'python'
        ? [
            await this.interpreters.get('python'),
            '-m',
            'pip',
            'install',
            '--target',
            env.dir,
            '--upgrade',
            '--disable-pip-version-check',
            '--no-input',
            '--retries',
            '1',
            '--timeout',
            '30',
            pkg.spec,
          ]
        : [
            await this.npm(),
            'install',
            '--prefix',
            env.dir,
            '--no-audit',
            '--no-fund',
            '--no-update-notifier',
            pkg.spec,
          ];
    const extra: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.hostEnv)) {
      if (INSTALLER_ENV.test(name) && value !== undefined) extra[name] = value;
    }
    const started = Date.now();
    const result = await runCommand(
      this.backend,
      {
        argv,
        cwd: env.dir,
        env: sandboxEnv(this.hostEnv, extra),
        writablePaths: [env.dir],
        readablePaths: [],
        limits: this.config.limits,
        network: 'host',
        stdin: 'ignore',
      },
      {
        timeoutMs: this.config.installTimeoutMs,
        killGraceMs: this.config.killGraceMs,
        output: this.config.output,
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
