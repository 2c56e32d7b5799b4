import type { Queryable } from '../../store/index.js';
import { LOCAL_PRINCIPAL } from '../../util/index.js';
import { ID_SLOTS, timeKey } from '../keys.js';
import { codePreview, errorPreview, executedAt, parseLine, statusOf } from '../lines.js';
import { entryWords, facetsSql } from './tokens.js';

/** What a batch of appended JSONL lines puts into PostgreSQL. */
export interface LogBatch {
  readonly sessions: Map<string, string>;
  /** One array per column of codexec_log_executions (see INSERT below), a row per execution. */
  readonly columns: unknown[][];
  readonly ids: string[];
}

const COLUMN_COUNT = 16;

/**
 * Parse appended lines as the SQLite indexer does (parseLine: execution and session_start lines
 * count, others are skipped) and derive the same columns index.db keeps, plus the words.
 */
export function toBatch(lines: readonly string[], replica: string): LogBatch {
  const sessions = new Map<string, string>();
  const executions = [];
  for (const text of lines) {
    const parsed = parseLine(text.trimEnd());
    if (parsed.kind === 'session_start') sessions.set(parsed.sessionId, parsed.language);
    if (parsed.kind === 'execution') executions.push({ line: parsed.line, text: text.trimEnd() });
  }
  const words = executions.map(({ line }) =>
    entryWords(line.code, line.stdout, line.stderr, line.script_name ?? ''),
  );
  const columns: unknown[][] = Array.from({ length: COLUMN_COUNT }, () => []);
  executions.forEach(({ line, text }, i) => {
    const status = statusOf(line);
    const at = executedAt(line);
    const entryWords = words[i] as (typeof words)[number];
    const values = [
      line.execution_id,
      line.session_id ?? null,
      line.language ?? null,
      status,
      line.exit_code,
      Math.round(line.duration_ms),
      at,
      timeKey(Date.parse(at)) / ID_SLOTS,
      utf8(codePreview(line.code)),
      utf8(errorPreview(line, status)),
      line.principal ?? LOCAL_PRINCIPAL,
      replica,
      text,
      entryWords.vector,
      entryWords.tokens,
      line.script_name ?? null,
    ];
    values.forEach((value, column) => {
      columns[column]?.push(clean(value));
    });
  });
  columns.push(executions.map((_, i) => (words[i] as (typeof words)[number]).spilled));
  return { sessions, columns, ids: executions.map(({ line }) => line.execution_id) };
}

function utf8(text: string | null): Buffer | null {
  return text === null ? null : Buffer.from(text, 'utf8');
}

/** PostgreSQL text holds no NUL character (SQLite does): it becomes U+FFFD. */
function clean(value: unknown): unknown {
  return typeof value === 'string' && value.includes('\0') ? value.replaceAll('\0', '\uFFFD') : value;
}

/**
 * Insert a batch in one transaction: session languages first (an execution line without its
 * language takes its session's), then the executions in arrival order, and the counts of those
 * added; an id already present (the same entry twice) stays as it was, as in index.db.
 */
export async function insertBatch(tx: Queryable, batch: LogBatch): Promise<void> {
  if (batch.sessions.size > 0) {
    await tx.query(
      `INSERT INTO codexec_log_sessions (session_id, language)
       SELECT * FROM unnest($1::text[], $2::text[])
       ON CONFLICT (session_id) DO UPDATE SET language = EXCLUDED.language`,
      [[...batch.sessions.keys()].map(clean), [...batch.sessions.values()].map(clean)],
    );
  }
  if (batch.ids.length === 0) return;
  await tx.query(
    `WITH added AS (INSERT INTO codexec_log_executions (execution_id, session_id, language, status, exit_code,
       duration_ms, executed_at, executed_ms, code_preview, error_preview, principal, replica, line,
       words, tokens, script_name, spilled)
     SELECT r.execution_id, r.session_id, coalesce(r.language, s.language), r.status, r.exit_code,
       r.duration_ms, r.executed_at, r.executed_ms, r.code_preview, r.error_preview, r.principal,
       r.replica, r.line, r.words::tsvector || ${facetsSql('r', 'coalesce(r.language, s.language)')},
       r.tokens, r.script_name, r.spilled
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::text[],
       $8::bigint[], $9::bytea[], $10::bytea[], $11::text[], $12::text[], $13::text[], $14::text[],
       $15::text[], $16::text[], $17::bool[])
       WITH ORDINALITY AS r(execution_id, session_id, language, status, exit_code, duration_ms,
         executed_at, executed_ms, code_preview, error_preview, principal, replica, line, words,
         tokens, script_name, spilled, arrival)
     LEFT JOIN codexec_log_sessions s ON r.language IS NULL AND s.session_id = r.session_id
     ORDER BY r.arrival
     ON CONFLICT (execution_id) DO NOTHING
     RETURNING principal, coalesce(language, '') AS language, status)
     INSERT INTO codexec_log_counts (principal, language, status, n)
     SELECT principal, language, status, count(*) FROM added GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
     ON CONFLICT (principal, language, status) DO UPDATE SET n = codexec_log_counts.n + EXCLUDED.n`,
    batch.columns,
  );
}
