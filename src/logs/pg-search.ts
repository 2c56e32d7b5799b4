import type { Queryable } from '../store/index.js';
import { parseSince, type SearchFilters, type SearchPage, type SearchResult } from './filters.js';
import { ID_SLOTS, timeKey } from './keys.js';
import { isCut, lexeme, quoteLexeme, SPILL, type TermTokens, type Tokenizer } from './pg-tokens.js';
import { queryTerms } from './search.js';

/** A statement and its parameters ($1 …): nothing from the caller is ever spliced into the SQL. */
export interface PgStatement {
  readonly sql: string;
  readonly params: unknown[];
}

const COLUMNS =
  'execution_id, session_id, language, code_preview, status, exit_code, error_preview, ' +
  'duration_ms::float8 AS duration_ms, executed_at';

/**
 * The search as one statement (one snapshot for the count and the page), with index.db's
 * semantics: every query term must occur in code, stdout or stderr as a phrase of its tokens
 * whose last token is a prefix (FTS5's `"term"*`), the filters are equalities, `since` is a bound
 * on the time, and the order is newest first with arrival breaking ties.
 */
export function searchStatement(
  filters: SearchFilters,
  principal: string | undefined,
  terms: readonly TermTokens[] | undefined,
): PgStatement {
  const where: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  if (principal !== undefined) where.push(`principal = ${param(principal)}`);
  if (filters.language !== undefined) where.push(`language = ${param(filters.language)}`);
  if (filters.status !== undefined) where.push(`status = ${param(filters.status)}`);
  // Nothing but principal, language and status: codexec_log_counts has the total, as index.db's counts.
  const counted = [...where];
  if (filters.session_id !== undefined) where.push(`session_id = ${param(filters.session_id)}`);
  if (filters.since !== undefined) {
    // index.db: id >= timeKey(since); its ms part is executed_ms (clamped the same way).
    where.push(`executed_ms >= ${param(timeKey(parseSince(filters.since) ?? 0) / ID_SLOTS)}`);
  }
  if (terms !== undefined) where.push(textCondition(terms, param));
  const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  const limit = param(filters.limit);
  const total =
    counted.length === where.length
      ? `SELECT coalesce(sum(n), 0)::int AS total FROM codexec_log_counts ${clause}`
      : `SELECT count(*)::int AS total FROM codexec_log_executions ${clause}`;
  return {
    sql:
      `SELECT m.total, p.* FROM (${total}) m ` +
      `LEFT JOIN LATERAL (SELECT ${COLUMNS} FROM codexec_log_executions ${clause} ` +
      `ORDER BY executed_ms DESC, seq DESC LIMIT ${limit}) p ON m.total > 0`,
    params,
  };
}

/**
 * The GIN index finds entries holding every term's words (the last as a prefix); phrases (terms
 * of several tokens) and cut long tokens are then checked on the tokens in order, and a spilled
 * entry (its words are only SPILL) has every term checked that way.
 */
function textCondition(terms: readonly TermTokens[], param: (value: unknown) => string): string {
  if (terms.some((tokens) => tokens.length === 0)) return 'false';
  const lexemes = terms.flatMap((tokens) =>
    tokens.map((token, i) => {
      const prefix = i === tokens.length - 1 || isCut(token);
      return `${quoteLexeme(lexeme(token))}${prefix ? ':*' : ''}`;
    }),
  );
  const query = `(${lexemes.join(' & ')}) | ${quoteLexeme(SPILL)}`;
  const like = (tokens: TermTokens) => `tokens LIKE ${param(likePattern(tokens))}`;
  const exact = terms.filter((tokens) => tokens.length === 1 && !isCut(tokens[0] as string));
  const checked = terms.filter((tokens) => !exact.includes(tokens));
  const always = checked.map(like);
  const whenSpilled = exact.map(like);
  const words = `words @@ ${param(query)}::tsquery`;
  const normal = always.length > 0 ? `NOT spilled AND ${always.join(' AND ')}` : 'NOT spilled';
  const spilled = ['spilled', ...always, ...whenSpilled].join(' AND ');
  return `${words} AND ((${normal}) OR (${spilled}))`;
}

/** ` t1 t2 … tn` then anything: the phrase at a token boundary of one column, its last token a prefix. */
export function likePattern(tokens: TermTokens): string {
  return `% ${tokens.map((token) => token.replace(/[\\%_]/g, '\\$&')).join(' ')}%`;
}

interface Row extends Omit<SearchResult, 'code_preview' | 'error_preview'> {
  total: number;
  code_preview: Buffer;
  error_preview: Buffer | null;
}

/** Run a search: `filters.query` is split into terms as the SQLite index splits it. */
export async function pgSearch(
  db: Queryable,
  tokenizer: Tokenizer,
  filters: SearchFilters,
  principal: string | undefined,
): Promise<SearchPage> {
  const terms = filters.query === undefined ? undefined : tokenizer.terms(queryTerms(filters.query));
  const { sql, params } = searchStatement(filters, principal, terms);
  const rows = await db.query<Row>(sql, params);
  const total = rows[0]?.total ?? 0;
  const results =
    total === 0
      ? []
      : rows.map((row) => ({
          // index.db's column order: the tools' JSON is the same either way.
          execution_id: row.execution_id,
          session_id: row.session_id,
          language: row.language,
          code_preview: row.code_preview.toString('utf8'),
          status: row.status,
          exit_code: row.exit_code,
          error_preview: row.error_preview?.toString('utf8') ?? null,
          duration_ms: row.duration_ms,
          executed_at: row.executed_at,
        }));
  return { results, total_count: total };
}
