import type { SandboxMode } from '../config/index.js';
import { SandboxUnavailableError } from '../errors/index.js';
import { log } from '../util/index.js';
import { SubprocessBackend } from './subprocess/index.js';
import type { SandboxBackend } from './types.js';

/**
 * The one place that picks a concrete backend. Resolution is lazy (first execution, not start-up)
 * and cached: probing costs a process spawn for the stronger backends.
 */
export class BackendRegistry {
  private resolved: Promise<SandboxBackend> | undefined;

  constructor(private readonly mode: SandboxMode) {}

  get(): Promise<SandboxBackend> {
    this.resolved ??= this.resolve();
    return this.resolved;
  }

  private async resolve(): Promise<SandboxBackend> {
    const subprocess = new SubprocessBackend();
    switch (this.mode) {
      case 'subprocess':
        return subprocess;
      case 'auto':
        log(
          'warn',
          'sandbox mode "auto": no namespace backend is available in this build, so code runs in ' +
            '"subprocess" mode, which does NOT confine files, network or resources.',
        );
        return subprocess;
      case 'namespace':
      case 'docker':
        throw new SandboxUnavailableError(
          `sandbox mode "${this.mode}" is not available in this build; set CODEXEC_SANDBOX_MODE=subprocess ` +
            'to run without isolation (run `codexec doctor` for details).',
        );
    }
  }
}
