import { CodexecError } from '../errors/index.js';

/** A principal's workspaces hold CODEXEC_MAX_PRINCIPAL_DISK_MB already: no new run or session. */
export class DiskQuotaError extends CodexecError {
  constructor(message: string) {
    super('LIMIT_REACHED', message);
    this.name = 'DiskQuotaError';
  }
}
