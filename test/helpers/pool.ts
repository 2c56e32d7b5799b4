// Waiting for the warm pool: a run is warm only if the pool holds a process of its kind when the
// run arrives, so a test that needs a warm run waits for one (the `health` tool's pool counts).
import type { Client } from '@modelcontextprotocol/client';
import { callTool } from './server.js';

/** The pool's kind for a language (TypeScript runs on a warm node). */
export const poolKind = (language: string): string => (language === 'typescript' ? 'node' : language);

/** Whether the server behind `client` holds a warm process for `language` within `ms`. */
export async function warmReady(client: Client, language: string, ms = 30_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { value } = await callTool<{ pool: { ready: Record<string, number> } }>(client, 'health', {});
    if ((value.pool.ready[poolKind(language)] ?? 0) > 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50)); // the poll's interval
  }
}
