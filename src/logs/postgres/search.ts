import type { Postgres } from '../../store/index.js';
import {
  parseSince,
  queryTerms,
  type SearchFilters,
  type SearchPage,
  type SearchResult,
} from '../filters.js';
import { ID_SLOTS, timeKey } from '../keys.js';
import {
  isCut,
  languageLexeme,
  lexeme,
  ownerLexeme,
  quoteLexeme,
  SPILL,
  statusLexeme,
  type TermTokens,
  termTokens,
} from './tokens.js';

/** A statement and its parameters ($1 …): nothing from the caller is ever spliced into the SQL. */
export interface PgStatement {
  readonly sql: string;
  readonly params: unknown[];
}

const COLUMNS =
  'execution_id, session_id, language, code_preview, status, exit_code, error_preview, ' +
  'duration_ms::float8 AS duration_ms, executed_at, script_name';

/**
 * The search as one statement (one snapshot for the count and the page), with index.db's
 * semantics: every query term must occur in code, stdout, stderr or the script's name as a phrase of its tokens
 * whose last token is a prefix (FTS5's `"term"*`), the filters are equalities, `since` is a bound
 * on the time, and the order is newest first with arrival breaking ties.
 */
export function searchStatement(
  filters: SearchFilters,
  principal: string | undefined,
  terms: readonly TermTokens[] | undefined,
): PgStatement {
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  if (terms !== undefined) return textStatement(filters, principal, terms, params, param);
  const where: string[] = [];
  if (principal !== undefined) where.push(`principal = ${param(principal)}`);
  if (filters.language !== undefined) where.push(`language = ${param(filters.language)}`);
  if (filters.status !== undefined) where.push(`status = ${param(filters.status)}`);
  // Nothing but principal, language and status: codexec_log_counts has the total, as index.db's counts.
  const counted = where.length;
  where.push(...rangeConditions(filters, param));
  const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  const limit = param(filters.limit);
  const total =
    counted === where.length
      ? `SELECT coalesce(sum(n), 0)::int AS total FROM codexec_log_counts ${clause}`
      : `SELECT count(*)::int AS total FROM codexec_log_executions ${clause}`;
  const page = `SELECT ${COLUMNS} FROM codexec_log_executions ${clause} ${NEWEST_FIRST} LIMIT ${limit}`;
  return { sql: withTotal(total, page), params };
}

const NEWEST_FIRST = 'ORDER BY executed_ms DESC, seq DESC';

function withTotal(total: string, page: string): string {
  // OFFSET 0 keeps the count a subquery of its own: pulled up, it would be run twice.
  return `SELECT m.total, p.* FROM (${total} OFFSET 0) m LEFT JOIN LATERAL (${page}) p ON m.total > 0`;
}

function rangeConditions(filters: SearchFilters, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filters.session_id !== undefined) where.push(`session_id = ${param(filters.session_id)}`);
  if (filters.script_name !== undefined) where.push(`script_name = ${param(filters.script_name)}`);
  if (filters.since !== undefined) {
    // index.db: id >= timeKey(since); its ms part is executed_ms (clamped the same way).
    where.push(`executed_ms >= ${param(timeKey(parseSince(filters.since) ?? 0) / ID_SLOTS)}`);
  }
  return where;
}

/**
 * A text search: the GIN index finds entries holding every term's words (the last as a prefix)
 * and the principal, language and status (facet lexemes, as index.db's facet tokens), so that
 * counting common words needs no row; phrases (terms of several tokens) and cut long tokens are
 * then checked on the tokens in order. Spilled entries (their words are SPILL and the facets)
 * are the second branch, every term checked on their tokens.
 */
function textStatement(
  filters: SearchFilters,
  principal: string | undefined,
  terms: readonly TermTokens[],
  params: unknown[],
  param: (value: unknown) => string,
): PgStatement {
  const facets = [
    ...(principal === undefined ? [] : [ownerLexeme(principal)]),
    ...(filters.language === undefined ? [] : [languageLexeme(filters.language)]),
    ...(filters.status === undefined ? [] : [statusLexeme(filters.status)]),
  ].map(quoteLexeme);
  const lexemes = terms.flatMap((tokens) =>
    tokens.map((token, i) => {
      const prefix = i === tokens.length - 1 || isCut(token);
      return `${quoteLexeme(lexeme(token))}${prefix ? ':*' : ''}`;
    }),
  );
  const like = (tokens: TermTokens) => `tokens LIKE ${param(likePattern(tokens))}`;
  const exact = terms.filter((tokens) => tokens.length === 1 && !isCut(tokens[0] as string));
  const checked = terms.filter((tokens) => !exact.includes(tokens)).map(like);
  const range = rangeConditions(filters, param);
  const indexed = [`words @@ ${param([...lexemes, ...facets].join(' & '))}::tsquery`, ...checked, ...range];
  const spilled = [
    `words @@ ${param([quoteLexeme(SPILL), ...facets].join(' & '))}::tsquery`,
    ...checked,
    ...exact.map(like),
    ...range,
  ];
  if (terms.some((tokens) => tokens.length === 0)) {
    indexed.push('false');
    spilled.push('false');
  }
  const limit = param(filters.limit);
  const branch = (where: string[]) =>
    `(SELECT ${COLUMNS}, executed_ms, seq FROM codexec_log_executions WHERE ${where.join(' AND ')} ` +
    `${NEWEST_FIRST} LIMIT ${limit})`;
  const count = (where: string[]) =>
    `(SELECT count(*) FROM codexec_log_executions WHERE ${where.join(' AND ')})`;
  return {
    sql: withTotal(
      `SELECT (${count(indexed)} + ${count(spilled)})::int AS total`,
      `SELECT * FROM (${branch(indexed)} UNION ALL ${branch(spilled)}) u ${NEWEST_FIRST} LIMIT ${limit}`,
    ),
    params,
  };
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
  store: Postgres,
  filters: SearchFilters,
  principal: string | undefined,
): Promise<SearchPage> {
  const terms = filters.query === undefined ? undefined : termTokens(queryTerms(filters.query));
  const rows = await store.transaction(async (tx) => {
    // One snapshot for the check below and the search.
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    // JIT compiling costs ~150 ms on a million rows, more than the search it would speed up; a
    // bitmap of every row of a common word stays exact (not lossy: no re-reading rows) in 32 MB.
    const [state] = await tx.query<{ others: boolean }>(
      `SELECT set_config('jit', 'off', true), set_config('work_mem', '32MB', true),
         EXISTS (SELECT 1 FROM codexec_log_counts WHERE principal <> $1 AND n > 0) AS others`,
      [principal ?? ''],
    );
    // While the log holds no one else's entries the principal filter is left out, as index.db
    // does: it would only cost an intersection with a posting list as long as the table.
    const owner = principal !== undefined && state?.others === true ? principal : undefined;
    const { sql, params } = searchStatement(filters, owner, terms);
    return tx.query<Row>(sql, params);
  });
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
          script_name: row.script_name,
        }));
  return { results, total_count: total };
}
