// Shared helpers for the session tests: typed tool calls and process checks.
import { readdirSync, readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import { callTool } from '../helpers/server.js';

export interface SendValue {
  success: boolean;
  execution_id: string;
  session_id: string;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  duration_ms: number;
  timed_out: boolean;
  truncated: boolean;
  artifacts: string[];
  session_alive: boolean;
  error?: string;
}

export interface StartValue {
  success: boolean;
  session_id: string;
  pid: number;
  working_dir: string;
  error?: string;
  code?: string;
}

export async function start(client: Client, language: string, extra: Record<string, unknown> = {}) {
  const { isError, value } = await callTool<StartValue>(client, 'start_session', { language, ...extra });
  if (isError) throw new Error(`start_session failed: ${JSON.stringify(value)}`);
  return value;
}

export async function send(client: Client, session_id: string, code: string, timeout_ms?: number) {
  const args: Record<string, unknown> = { session_id, code };
  if (timeout_ms !== undefined) args.timeout_ms = timeout_ms;
  return callTool<SendValue>(client, 'send_to_session', args, { timeout: 120_000 });
}

/** True while a process with this pid exists (and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

/** `root` and every process below it, from /proc parent links. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone already
    }
  }
  const tree: number[] = [];
  const pending = [root];
  while (pending.length > 0) {
    const pid = pending.pop() as number;
    tree.push(pid);
    pending.push(...(children.get(pid) ?? []));
  }
  return tree;
}

export const allGone = (pids: readonly number[]) => waitUntil(() => pids.every((pid) => !alive(pid)), 10_000);
