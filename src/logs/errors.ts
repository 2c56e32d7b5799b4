import { CodexecError } from '../errors/index.js';

export class ExecutionNotFoundError extends CodexecError {
  constructor(id: string) {
    super(
      'NOT_FOUND',
      `No execution ${id} in the logs. Check the id (exec_ + 12 hex, from a result or ` +
        'search_execution_logs); entries past retention are deleted.',
    );
    this.name = 'ExecutionNotFoundError';
  }
}
