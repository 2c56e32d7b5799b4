// What a run's result says beside its process's output: its tool calls (code mode), a failure
// before any process (TypeScript that does not parse), and the end mark a cold run's sandbox writes.
import { randomUUID } from 'node:crypto';
import { toolCallFields } from '../bridge/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { CodeSyntaxError } from '../runtimes/index.js';
import { END_MARK_BYTES } from '../sandbox/index.js';
import type { Collected } from './collect.js';
import type { ExecutionRequest } from './types.js';

/** The run's tool calls for its result and log entry (none: no code mode, or no call made). */
export function toolCallsOf(request: ExecutionRequest) {
  const log = request.bridge?.takeCalls();
  return log ? toolCallFields(log) : {};
}

/** Code that could not be prepared (a TypeScript syntax error) fails like a run that exited 1. */
export function syntaxFailure(error: CodeSyntaxError, secrets: SecretsFilter | undefined): Collected {
  // The message may quote the code's line: masked like any output.
  const stderr = `${error.message}\n`;
  return {
    stdout: '',
    stderr: secrets ? secrets.redact(stderr) : stderr,
    truncated: false,
    exit_code: 1,
    timed_out: false,
    cancelled: false,
  };
}

/** A cold run's end mark (SandboxSpec.endMark): END_MARK_BYTES of ASCII. */
export function coldMark(): string {
  const mark = `\n[codexec-end ${randomUUID().replaceAll('-', '').slice(0, 16)}]\n`;
  if (mark.length !== END_MARK_BYTES) throw new Error('end mark of the wrong length');
  return mark;
}
