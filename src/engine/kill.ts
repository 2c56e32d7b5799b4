import type { SandboxedProcess } from '../sandbox/index.js';
import { settledWithin } from '../util/index.js';

/** SIGTERM the whole run, give it `graceMs` to exit, then SIGKILL whatever is left. */
export async function terminate(proc: SandboxedProcess, graceMs: number): Promise<void> {
  proc.kill('SIGTERM');
  await within(proc.exited, graceMs);
  proc.kill('SIGKILL');
}

/**
 * Wait until both output streams have ended (or `enough` resolves: all output is known to be in),
 * at most `ms`; then stop reading them.
 */
export async function drain(proc: SandboxedProcess, ms: number, enough?: Promise<unknown>): Promise<void> {
  const ended = (stream: NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean }) =>
    stream.readableEnded || stream.destroyed
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          stream.once('close', resolve);
          stream.once('end', resolve);
        });
  const done = Promise.all([ended(proc.stdout), ended(proc.stderr)]);
  await within(enough ? Promise.race([done, enough]) : done, ms);
  proc.stdout.destroy();
  proc.stderr.destroy();
}

/** Whether `promise` settles within `ms` (the timer is cleared either way). */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return (
    (await settledWithin(
      promise.then(() => true),
      ms,
    )) ?? false
  );
}
