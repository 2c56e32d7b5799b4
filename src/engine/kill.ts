import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxedProcess } from '../sandbox/index.js';

/** SIGTERM the whole run, give it `graceMs` to exit, then SIGKILL whatever is left. */
export async function terminate(proc: SandboxedProcess, graceMs: number): Promise<void> {
  proc.kill('SIGTERM');
  const controller = new AbortController();
  await Promise.race([proc.exited, sleep(graceMs, undefined, { signal: controller.signal }).catch(() => {})]);
  controller.abort();
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
  const controller = new AbortController();
  await Promise.race([
    Promise.all([ended(proc.stdout), ended(proc.stderr)]),
    ...(enough ? [enough] : []),
    sleep(ms, undefined, { signal: controller.signal }).catch(() => {}),
  ]);
  controller.abort();
  proc.stdout.destroy();
  proc.stderr.destroy();
}
