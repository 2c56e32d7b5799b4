import { CodexecError } from '../errors/index.js';
import { type FullEntry, type History, type SearchPage, searchFiltersSchema } from '../logs/index.js';
import { createServices } from '../server/index.js';
import { configOrExit } from './config.js';

export interface LogsSearchOptions {
  language?: string;
  status?: string;
  query?: string;
  since?: string;
  sessionId?: string;
  script?: string;
  limit?: number;
  json?: boolean;
}

/** `codexec logs search`: the same filters, validation and index as search_execution_logs. */
export async function logsSearchCommand(options: LogsSearchOptions): Promise<void> {
  const parsed = searchFiltersSchema().safeParse({
    language: options.language,
    status: options.status,
    query: options.query,
    since: options.since,
    session_id: options.sessionId,
    script_name: options.script,
    limit: options.limit,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail(`${issue?.path.join('.') || 'filters'}: ${issue?.message ?? 'invalid'}`);
  }
  const page = await withHistory((history) => history.search(parsed.data));
  if (options.json) process.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
  else printPage(page);
}

/** `codexec logs show ID`: the full entry, as get_execution_log returns it. */
export async function logsShowCommand(executionId: string, options: { json?: boolean }): Promise<void> {
  const entry = await withHistory((history) => history.get(executionId));
  if (options.json) process.stdout.write(`${JSON.stringify(entry, null, 2)}\n`);
  else printEntry(entry);
}

/** The history createServices chose: index.db, or the shared tables with CODEXEC_STORE=postgres://…. */
async function withHistory<T>(task: (history: History) => Promise<T>): Promise<T> {
  const { history, store } = await createServices(configOrExit());
  let refused: string;
  try {
    return await task(history);
  } catch (error) {
    if (!(error instanceof CodexecError)) throw error;
    refused = error.message;
  } finally {
    await history.close();
    await store?.close();
  }
  fail(refused);
}

function printPage(page: SearchPage): void {
  for (const r of page.results) {
    const exit = r.exit_code === null ? '' : ` (exit ${r.exit_code})`;
    const where = `${r.session_id ? `  ${r.session_id}` : ''}${r.script_name ? `  script ${r.script_name}` : ''}`;
    console.log(
      `${r.execution_id}  ${r.executed_at}  ${r.language ?? '?'}  ${r.status}${exit}  ${r.duration_ms} ms${where}`,
    );
    console.log(`    ${firstLine(r.code_preview)}`);
    if (r.error_preview) console.log(`    ! ${r.error_preview}`);
  }
  console.log(`${page.results.length} shown of ${page.total_count} matching`);
}

function printEntry(e: FullEntry): void {
  const exit = e.exit_code === null ? 'none' : String(e.exit_code);
  console.log(`${e.execution_id}  ${e.status}  exit ${exit}  ${e.duration_ms} ms  ${e.executed_at}`);
  console.log(
    `language: ${e.language ?? '?'}  sandbox: ${e.sandbox_mode ?? '?'}  session: ${e.session_id ?? '-'}`,
  );
  if (e.script_name) console.log(`script: ${e.script_name}`);
  if (e.working_dir) console.log(`working dir: ${e.working_dir}`);
  const artifacts = [...e.artifacts_created.map((f) => `+${f}`), ...e.artifacts_modified.map((f) => `~${f}`)];
  if (artifacts.length > 0 || e.artifacts_deleted.length > 0) {
    console.log(`artifacts: ${[...artifacts, ...e.artifacts_deleted.map((f) => `-${f}`)].join(' ')}`);
  }
  for (const [name, text] of [
    ['code', e.code],
    ['stdout', e.stdout],
    ['stderr', e.stderr],
  ] as const) {
    if (text === '' && name !== 'code') continue;
    console.log(`--- ${name}`);
    console.log(text.endsWith('\n') ? text.slice(0, -1) : text);
  }
}

function firstLine(code: string): string {
  const text = code.trimEnd();
  const line = text.split('\n')[0] ?? '';
  return text.includes('\n') ? `${line} …` : line;
}

function fail(message: string): never {
  process.stderr.write(`codexec: ${message}\n`);
  process.exit(2);
}
