import type { Statement } from 'better-sqlite3';
import {
  parseSince,
  queryTerms,
  type SearchFilters,
  type SearchPage,
  type SearchResult,
} from '../filters.js';
import { facetFilter, ownerToken, sessionToken, timeKey } from '../keys.js';
import type { Db } from './db.js';

/**
 * The FTS5 expression for a user's query: each whitespace-separated term becomes a quoted phrase
 * (so no FTS syntax leaks through) matched as a prefix, and all terms must match.
 */
export function ftsExpression(query: string): string {
  return queryTerms(query)
    .map((term) => `${quote(term)}*`)
    .join(' ');
}

function quote(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

const COLUMNS =
  'execution_id, session_id, language, code_preview, status, exit_code, error_preview, duration_ms, ' +
  'executed_at, script_name';

interface Plan {
  count: string;
  countParams: unknown[];
  page: string;
  params: unknown[];
}

/**
 * Runs searches against the index; statements are prepared once per filter shape. Three plans
 * (choosePlan): text queries and language/status filters run inside FTS5 (filters are facet
 * tokens there) and count without touching the table; language/status alone take their total
 * from the `counts` table the indexer keeps; sessions and bare time ranges use the table. All read newest first straight off the time-ordered id, so only
 * `limit` rows are fetched.
 */
export class Searcher {
  private readonly statements = new Map<string, Statement<unknown[]>>();
  private readonly othersThan: Statement<[string, string], { found: number }>;

  constructor(private readonly db: Db) {
    // Two range probes of the principal index, not `principal <> ?`: that one scans every row
    // when they are all the caller's (~40 ms at 1M entries, on every search a tool makes).
    this.othersThan = db.prepare(
      `SELECT EXISTS (SELECT 1 FROM executions WHERE principal < ?)
           OR EXISTS (SELECT 1 FROM executions WHERE principal > ?) AS found`,
    );
  }

  /**
   * `principal`: only its executions (serve --http; stdio is `local`); undefined: everyone's (the
   * operator's CLI). While the index holds no one else's, the filter is left out: it would only
   * cost a merge with a doclist as long as the index.
   */
  search(filters: SearchFilters, principal?: string): SearchPage {
    const since = filters.since === undefined ? undefined : timeKey(parseSince(filters.since) ?? 0);
    const owner =
      principal !== undefined && this.othersThan.get(principal, principal)?.found === 1
        ? principal
        : undefined;
    const plan = choosePlan(filters, since, owner);
    const count = this.prepare(plan.count);
    const page = this.prepare(plan.page);
    // One read transaction: the count and the page see the same snapshot.
    return this.db.transaction(() => {
      const total = (count.get(...plan.countParams) as { n: number }).n;
      const results = total === 0 ? [] : (page.all(...plan.params, filters.limit) as SearchResult[]);
      return { results, total_count: total };
    })();
  }

  private prepare(sql: string): Statement<unknown[]> {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

function choosePlan(filters: SearchFilters, since: number | undefined, owner: string | undefined): Plan {
  const session = filters.session_id === undefined ? undefined : sessionToken(filters.session_id);
  // A script's runs, as a session's, are few: the table, from its index.
  if (filters.script_name !== undefined) return tablePlan(filters, since, owner);
  if (filters.query !== undefined) {
    // A session id without letters or digits cannot be an FTS token: filter it in the table.
    return session === '' ? tablePlan(filters, since, owner) : ftsPlan(filters, since, session, owner);
  }
  if (session !== undefined) return tablePlan(filters, since, owner); // a session's rows are few
  const faceted = filters.language !== undefined || filters.status !== undefined;
  if (since !== undefined) {
    // Status alone over a time range: a range of the status index counts fastest.
    return filters.language !== undefined
      ? ftsPlan(filters, since, undefined, owner)
      : tablePlan(filters, since, owner);
  }
  // Nothing but language and/or status: the total is kept in `counts`.
  const page = faceted ? ftsPlan(filters, undefined, undefined, owner) : tablePlan(filters, undefined, owner);
  return { ...page, ...countsQuery(filters, owner) };
}

function ftsPlan(
  filters: SearchFilters,
  since: number | undefined,
  session: string | undefined,
  owner: string | undefined,
): Plan {
  const parts: string[] = [];
  if (filters.query !== undefined)
    parts.push(`{code stdout stderr script} : (${ftsExpression(filters.query)})`);
  if (filters.language !== undefined || filters.status !== undefined) {
    parts.push(`facet : ${quote(facetFilter(filters.language, filters.status))}`);
  }
  if (session !== undefined) parts.push(`session : ${quote(session)}`);
  if (owner !== undefined) parts.push(`owner : ${quote(ownerToken(owner))}`);
  const params: unknown[] = [parts.join(' AND ')];
  let where = 'executions_fts MATCH ?';
  if (since !== undefined) {
    where += ' AND rowid >= ?';
    params.push(since);
  }
  return {
    count: `SELECT count(*) AS n FROM executions_fts WHERE ${where}`,
    countParams: params,
    page:
      `SELECT ${COLUMNS} FROM executions WHERE id IN ` +
      `(SELECT rowid FROM executions_fts WHERE ${where} ORDER BY rowid DESC LIMIT ?) ORDER BY id DESC`,
    params,
  };
}

function tablePlan(filters: SearchFilters, since: number | undefined, owner: string | undefined): Plan {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    where.push(clause);
    params.push(value);
  };
  if (filters.session_id !== undefined) add('session_id = ?', filters.session_id);
  if (filters.script_name !== undefined) add('script_name = ?', filters.script_name);
  if (filters.language !== undefined) add('language = ?', filters.language);
  if (filters.status !== undefined) add('status = ?', filters.status);
  if (since !== undefined) add('id >= ?', since);
  if (owner !== undefined) add('principal = ?', owner);
  if (filters.query !== undefined) {
    add(
      'id IN (SELECT rowid FROM executions_fts WHERE executions_fts MATCH ?)',
      ftsExpression(filters.query),
    );
  }
  // A session or a script is the narrowest filter there is: make sure the planner starts from it.
  const from =
    filters.session_id !== undefined
      ? 'executions INDEXED BY executions_session'
      : filters.script_name !== undefined
        ? 'executions INDEXED BY executions_script'
        : 'executions';
  const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  return {
    count: `SELECT count(*) AS n FROM ${from} ${clause}`,
    countParams: params,
    page: `SELECT ${COLUMNS} FROM ${from} ${clause} ORDER BY id DESC LIMIT ?`,
    params,
  };
}

/** The total for language and/or status alone, from the counts the indexer keeps. */
function countsQuery(filters: SearchFilters, owner: string | undefined): Pick<Plan, 'count' | 'countParams'> {
  const where: string[] = [];
  const countParams: unknown[] = [];
  if (owner !== undefined) {
    where.push('principal = ?');
    countParams.push(owner);
  }
  if (filters.language !== undefined) {
    where.push('language = ?');
    countParams.push(filters.language);
  }
  if (filters.status !== undefined) {
    where.push('status = ?');
    countParams.push(filters.status);
  }
  const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  return { count: `SELECT coalesce(sum(n), 0) AS n FROM counts ${clause}`, countParams };
}
