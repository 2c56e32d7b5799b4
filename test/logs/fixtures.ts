// Log lines in the seed's format, written straight to a CODEXEC_HOME, and small call helpers.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { callTool } from '../helpers/server.js';

export const DAY_MS = 86_400_000;

/** Generous retention so fixed past dates survive the background retention pass. */
export const KEEP_ALL = {
  CODEXEC_LOG_RETENTION_DAYS_SUCCESS: '36500',
  CODEXEC_LOG_RETENTION_DAYS_FAILURE: '36500',
  CODEXEC_LOG_RETENTION_DAYS_SESSION: '36500',
};

export interface Oneshot {
  id: string;
  at: string;
  language?: string;
  code?: string;
  stdout?: string;
  stderr?: string;
  exit_code?: number | null;
  timed_out?: boolean;
  session_id?: string | null;
  script_name?: string;
}

/** A stateless execution entry exactly as the seed's "Stateless Execution Log Entry". */
export function oneshot(e: Oneshot): Record<string, unknown> {
  return {
    type: 'execution',
    execution_id: e.id,
    session_id: e.session_id ?? null,
    language: e.language ?? 'python',
    code: e.code ?? 'print(1)',
    stdin: null,
    stdout: e.stdout ?? '',
    stderr: e.stderr ?? '',
    exit_code: e.exit_code === undefined ? 0 : e.exit_code,
    timed_out: e.timed_out ?? false,
    cancelled: false,
    duration_ms: 12,
    memory_peak_mb: 45.2,
    sandbox_mode: 'subprocess',
    working_dir: `/tmp/sandbox/${e.id}`,
    artifacts: { created: ['out.csv'], modified: [], deleted: [] },
    guardian: { pre_scan: { passed: true, flags: [] }, post_scan: { passed: true, flags: [] } },
    context: { agent_id: 'annabelle', trace_id: 'tr_abc123', chat_id: 'telegram:12345' },
    ...(e.script_name && { script_name: e.script_name }),
    executed_at: e.at,
  };
}

export function dailyFile(at: string): string {
  return `executions-${at.slice(0, 10)}.jsonl`;
}

export function logDir(home: string): string {
  return join(home, 'logs');
}

/** Append raw lines (objects or text) to a log file of `home`. */
export function appendLines(
  home: string,
  file: string,
  lines: Array<Record<string, unknown> | string>,
): void {
  mkdirSync(logDir(home), { recursive: true });
  const text = lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n');
  appendFileSync(join(logDir(home), file), `${text}\n`);
}

export function writeOneshots(home: string, entries: Oneshot[]): void {
  for (const e of entries) appendLines(home, dailyFile(e.at), [oneshot(e)]);
}

/** A session log in the seed's "Session Log Entries" format (execution lines use `at`). */
export function writeSession(
  home: string,
  sessionId: string,
  language: string,
  executions: Array<{ id: string; at: string; code: string; stdout?: string; exit_code?: number }>,
): void {
  const first = executions[0]?.at ?? new Date().toISOString();
  appendLines(home, `session-${sessionId}.jsonl`, [
    {
      type: 'session_start',
      session_id: sessionId,
      language,
      name: 'analysis',
      pid: 12345,
      agent_id: 'annabelle',
      started_at: first,
    },
    {
      type: 'package_install',
      session_id: sessionId,
      package: 'pandas',
      version: '2.2.1',
      success: true,
      at: first,
    },
    ...executions.map((x) => ({
      type: 'execution',
      execution_id: x.id,
      session_id: sessionId,
      code: x.code,
      stdout: x.stdout ?? '',
      stderr: '',
      exit_code: x.exit_code ?? 0,
      duration_ms: 234,
      at: x.at,
    })),
  ]);
}

export interface Result {
  execution_id: string;
  session_id: string | null;
  language: string | null;
  code_preview: string;
  status: string;
  exit_code: number | null;
  error_preview: string | null;
  duration_ms: number;
  executed_at: string;
  script_name: string | null;
}

export interface Page {
  results: Result[];
  total_count: number;
}

export async function search(client: Client, args: Record<string, unknown> = {}): Promise<Page> {
  const call = await callTool<Page>(client, 'search_execution_logs', args);
  if (call.isError) throw new Error(`search refused: ${call.text}`);
  return call.value;
}

export async function ids(client: Client, args: Record<string, unknown> = {}): Promise<string[]> {
  return (await search(client, { limit: 500, ...args })).results.map((r) => r.execution_id);
}
