import type { SandboxMode } from '../config/index.js';
import { SandboxUnavailableError } from '../errors/index.js';
import { log } from '../util/index.js';
import { ContainerBackend, type ContainerOptions } from './container/index.js';
import { NamespaceBackend } from './namespace/index.js';
import { SubprocessBackend } from './subprocess/index.js';
import type { SandboxBackend } from './types.js';

/**
 * The one place that picks a concrete backend. Resolution is lazy (first execution, not start-up)
 * and cached: probing the namespace backend spawns a sandbox.
 */
export class BackendRegistry {
  private resolved: Promise<SandboxBackend> | undefined;

  constructor(
    private readonly mode: SandboxMode,
    private readonly namespace: NamespaceBackend = new NamespaceBackend(),
    /** Sandbox mode docker's engine and image settings (config.docker). */
    private readonly container?: ContainerOptions,
  ) {}

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
      case 'auto': {
        const probe = await this.namespace.probe();
        if (probe.available) return this.namespace;
        log(
          'warn',
          `\n${'!'.repeat(78)}\n  sandbox mode "auto": the namespace sandbox is NOT available (${probe.reason}).\n` +
            '  Code runs in "subprocess" mode, which does NOT confine files, network or resources.\n' +
            `  Run \`codexec doctor\` to see how to fix it.\n${'!'.repeat(78)}`,
        );
        return new SubprocessBackend();
      }
      case 'landlock': {
        const backend = new NamespaceBackend({ ...this.namespace.settings, confine: 'landlock' });
        const probe = await backend.probe();
        if (probe.available) return backend;
        throw new SandboxUnavailableError(
          `sandbox mode "landlock" is not available here: ${probe.reason}. Run \`codexec doctor\`.`,
        );
      }
      case 'docker': {
        if (!this.container) throw new SandboxUnavailableError('sandbox mode "docker" has no settings here');
        const backend = new ContainerBackend(this.container);
        const probe = await backend.probe();
        if (probe.available) return backend;
        throw new SandboxUnavailableError(`sandbox mode "docker" is not available here: ${probe.reason}`);
      }
    }
  }
}
