// Waiting on what the server's `health` tool reports: a warm process in the pool (a run is warm
// only if the pool holds one of its kind when it arrives), runs holding a slot.
import type { Client } from '@modelcontextprotocol/client';
import { callTool } from './server.js';

interface Health {
  pool: { ready: Record<string, number> };
  runs: { running: number; queued: number; max: number };
}

/** Poll `health` until `done` holds, at most `ms`; whether it did. */
async function healthUntil(client: Client, done: (health: Health) => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { value } = await callTool<Health>(client, 'health', {});
    if (done(value)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50)); // the poll's interval
  }
}

/** The pool's kind for a language (TypeScript runs on a warm node). */
export const poolKind = (language: string): string => (language === 'typescript' ? 'node' : language);

/** Whether the server behind `client` holds a warm process for `language` within `ms`. */
export function warmReady(client: Client, language: string, ms = 30_000): Promise<boolean> {
  return healthUntil(client, (health) => (health.pool.ready[poolKind(language)] ?? 0) > 0, ms);
}

/** Whether at least `count` runs hold a run slot of the server behind `client` within `ms`. */
export function runsRunning(client: Client, count = 1, ms = 30_000): Promise<boolean> {
  return healthUntil(client, (health) => health.runs.running >= count, ms);
}
