import type { SandboxMode } from '../config/index.js';
import { SandboxUnavailableError } from '../errors/index.js';
import { log } from '../util/index.js';
import type { ContainerOptions } from './container/index.js';
import type { LandlockBackend } from './landlock/index.js';
import { type Diagnosis, diagnoseNamespaces, explainCauses, NamespaceBackend } from './namespace/index.js';
import { SubprocessBackend } from './subprocess/index.js';
import type { SandboxBackend } from './types.js';

/** What `auto` consults besides the namespace backend (tests put fakes here). */
export interface AutoOptions {
  /** The landlock backend (default: one with the namespace backend's settings). */
  readonly landlock?: LandlockBackend;
  readonly landlockAbi?: () => number;
  readonly diagnose?: () => Diagnosis;
  readonly platform?: NodeJS.Platform;
}

/**
 * The one place that picks a concrete backend. Resolution is lazy (first execution, not start-up)
 * and cached: probing the namespace backend spawns a sandbox. The landlock and container backends'
 * code is loaded only when one is wanted: a server of another mode never holds it.
 */
export class BackendRegistry {
  private resolved: Promise<SandboxBackend> | undefined;

  constructor(
    private readonly mode: SandboxMode,
    private readonly namespace: NamespaceBackend = new NamespaceBackend(),
    /** Sandbox mode docker's engine and image settings (config.docker). */
    private readonly container?: ContainerOptions,
    private readonly auto: AutoOptions = {},
  ) {}

  private landlockBackend: LandlockBackend | undefined;
  /** Why namespaces fail here, found once (it runs unshare); as cached as the namespace probe. */
  private diagnosis: Diagnosis | undefined;

  /** The backend of sandbox mode landlock, made once (its probe is cached with it). */
  async landlock(): Promise<LandlockBackend> {
    if (!this.landlockBackend) {
      const { LandlockBackend } = await import('./landlock/index.js');
      this.landlockBackend ??= this.auto.landlock ?? new LandlockBackend(this.namespace.settings);
    }
    return this.landlockBackend;
  }

  get(): Promise<SandboxBackend> {
    this.resolved ??= this.resolve();
    // A refusal is not cached: the operator may install bubblewrap and retry.
    this.resolved.catch(() => {
      this.resolved = undefined;
    });
    return this.resolved;
  }

  /** Release what the backend in use keeps across runs (none was picked: nothing to do). */
  async shutdown(): Promise<void> {
    const backend = await this.resolved?.catch(() => undefined);
    await backend?.shutdown?.();
  }

  private async resolve(): Promise<SandboxBackend> {
    switch (this.mode) {
      case 'subprocess':
        return new SubprocessBackend();
      case 'namespace': {
        const probe = await this.namespace.probe();
        if (probe.available) return this.namespace;
        throw new SandboxUnavailableError(
          `sandbox mode "namespace" is not available here: ${probe.reason}. Run \`codexec doctor\` for ` +
            'every layer, or set CODEXEC_SANDBOX_MODE=subprocess to run without isolation.',
        );
      }
      case 'auto':
        return this.resolveAuto();
      case 'landlock': {
        const landlock = await this.landlock();
        const probe = await landlock.probe();
        if (probe.available) return landlock;
        throw new SandboxUnavailableError(
          `sandbox mode "landlock" is not available here: ${probe.reason}. Run \`codexec doctor\`.`,
        );
      }
      case 'docker': {
        if (!this.container) throw new SandboxUnavailableError('sandbox mode "docker" has no settings here');
        const { ContainerBackend } = await import('./container/index.js');
        const backend = new ContainerBackend(this.container);
        const probe = await backend.probe();
        if (probe.available) return backend;
        throw new SandboxUnavailableError(`sandbox mode "docker" is not available here: ${probe.reason}`);
      }
    }
  }

  /**
   * Namespace if a probe sandbox starts; else landlock if the kernel has it and its probe runs;
   * else, on Linux, no code runs (subprocess is an explicit choice there, never a silent one).
   */
  private async resolveAuto(): Promise<SandboxBackend> {
    const probe = await this.namespace.probe();
    if (probe.available) return this.namespace;
    if ((this.auto.platform ?? process.platform) !== 'linux') {
      log(
        'warn',
        `\n${'!'.repeat(78)}\n  sandbox mode "auto": the namespace sandbox is NOT available (${probe.reason}).\n` +
          '  Code runs in "subprocess" mode, which does NOT confine files, network or resources.\n' +
          `  Run \`codexec doctor\` to see how to fix it.\n${'!'.repeat(78)}`,
      );
      return new SubprocessBackend();
    }
    this.diagnosis ??= (this.auto.diagnose ?? diagnoseNamespaces)();
    const causes = explainCauses(this.diagnosis.causes);
    const abi = (this.auto.landlockAbi ?? (await import('./landlock/index.js')).landlockAbi)();
    const landlock = abi > 0 ? await (await this.landlock()).probe() : undefined;
    if (landlock?.available) {
      log(
        'warn',
        `sandbox mode "auto" uses landlock (Landlock ABI ${abi}; no namespaces): the namespace sandbox cannot ` +
          `start here (${probe.reason}). ${causes || 'Run `codexec doctor` for every layer.'}`,
      );
      return this.landlock();
    }
    const noLandlock =
      abi > 0
        ? `Landlock (ABI ${abi}) could not start a probe either (${landlock?.reason})`
        : 'this kernel offers no Landlock (ABI 0) to confine code without namespaces';
    throw new SandboxUnavailableError(
      `sandbox mode "auto" will not run code here: the namespace sandbox cannot start (${probe.reason}) and ` +
        `${noLandlock}. ${causes ? `${causes} ` : ''}To run code WITHOUT isolation anyway, set ` +
        'CODEXEC_SANDBOX_MODE=subprocess explicitly. Run `codexec doctor` for every layer.',
    );
  }
}

/** What `auto` picked, and why, in the words `codexec doctor` prints (an Error: it refuses). */
export function describePick(auto: SandboxBackend | Error, abi: number): string {
  if (auto instanceof Error)
    return 'nothing: it refuses to run code (namespaces fail and Landlock cannot stand in)';
  if (auto.mode === 'namespace') return 'namespace (a probe sandbox started)';
  if (auto.mode === 'landlock') return `landlock (namespaces fail here, see below; Landlock ABI ${abi})`;
  return `${auto.mode} (not Linux: code is NOT confined)`;
}
