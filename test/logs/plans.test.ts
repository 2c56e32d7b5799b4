// Every combination of filters, checked against a brute-force search over the same entries: the
// index's three query plans (FTS, counts table, table indexes) must agree with the definition.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExecutionLogEntry, ExecutionLogs, type SearchFilters } from '../../src/logs/index.js';
import { tempDir } from '../helpers/server.js';
import { oneshot } from './fixtures.js';

let seed = 7;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;

const LANGS = ['python', 'node', 'typescript', 'bash'] as const;
const STATUSES = ['success', 'failed', 'timeout'] as const;
const WORDS = ['pandas', 'panda', 'numpy', 'requests', 'fetch', 'boom', 'Error', 'read_csv', 'zeta', 'alpha'];
const SESSIONS = [null, null, 'sess_aaaaaaaaaaaa', 'sess_bbbbbbbbbbbb', 'sess-c.1'];
const DAY = Date.UTC(2026, 5, 1);

interface Truth {
  id: string;
  language: string;
  status: string;
  session: string | null;
  ms: number;
  text: string;
}

const truth: Truth[] = [];
const home = tempDir();
const history = new ExecutionLogs({
  logDir: join(home, 'logs'),
  indexPath: join(home, 'index.db'),
  retentionDays: { success: 36500, failure: 36500, session: 36500 },
});

beforeAll(async () => {
  for (let i = 0; i < 600; i++) {
    const language = pick(LANGS);
    const status = pick(STATUSES);
    const session = pick(SESSIONS);
    // Some entries share a millisecond, to exercise the tie-breaking ids.
    const ms = DAY + Math.floor(rand() * 10) * 86_400_000 + Math.floor(rand() * 50);
    const code = `x = ${pick(WORDS)}(${i})`;
    const stdout = rand() < 0.5 ? `${pick(WORDS)} out` : '';
    const stderr = status === 'success' ? '' : `${pick(WORDS)} failed`;
    const id = `exec_${i.toString(16).padStart(12, '0')}`;
    const base = oneshot({
      id,
      at: new Date(ms).toISOString(),
      language,
      code,
      stdout,
      stderr,
      exit_code: status === 'success' ? 0 : status === 'failed' ? 1 : null,
      timed_out: status === 'timeout',
      session_id: session,
    }) as unknown as ExecutionLogEntry;
    if (session === null) await history.writer.appendExecution(base);
    else await history.writer.appendSession(session, base);
    truth.push({ id, language, status, session, ms, text: `${code}\n${stdout}\n${stderr}`.toLowerCase() });
  }
});
afterAll(async () => {
  await history.close();
  rmSync(home, { recursive: true, force: true });
});

function expected(f: SearchFilters) {
  const since =
    f.since === undefined ? undefined : Date.parse(f.since.length === 10 ? `${f.since}T00:00:00Z` : f.since);
  const terms = f.query?.toLowerCase().split(/\s+/) ?? [];
  const tokens = (text: string) => text.split(/[^a-z0-9]+/);
  const matching = truth.filter(
    (t) =>
      (f.language === undefined || t.language === f.language) &&
      (f.status === undefined || t.status === f.status) &&
      (f.session_id === undefined || t.session === f.session_id) &&
      (since === undefined || t.ms >= since) &&
      terms.every((term) => {
        const parts = tokens(term).filter(Boolean);
        const words = tokens(t.text);
        // A one-word term matches a word prefix; a multi-word term (read_csv) an exact run then a prefix.
        return words.some((_, k) =>
          parts.every((p, j) => (j === parts.length - 1 ? words[k + j]?.startsWith(p) : words[k + j] === p)),
        );
      }),
  );
  return matching;
}

describe('search plans agree with a brute-force search', () => {
  const combos: SearchFilters[] = [];
  for (let mask = 0; mask < 32; mask++) {
    for (let k = 0; k < 4; k++) {
      const f: SearchFilters = { limit: pick([1, 5, 20, 500]) };
      if (mask & 1) f.language = pick(LANGS);
      if (mask & 2) f.status = pick(STATUSES);
      if (mask & 4) f.query = pick([...WORDS, 'pand', 'panda boom', 'ERR', 'read_csv']);
      if (mask & 8) f.since = pick(['2026-06-04', '2026-06-08T00:00:00.020Z', '2026-06-11']);
      if (mask & 16) f.session_id = pick(['sess_aaaaaaaaaaaa', 'sess_bbbbbbbbbbbb', 'sess-c.1', 'sess_none']);
      combos.push(f);
    }
  }

  it.each(combos.map((f) => [JSON.stringify(f), f] as const))('%s', async (_, filters) => {
    const want = expected(filters);
    const page = await history.search(filters);
    expect(page.total_count).toBe(want.length);
    expect(page.results).toHaveLength(Math.min(filters.limit, want.length));
    // Newest first; ties within a millisecond may come in either order, so compare times and sets.
    const times = page.results.map((r) => Date.parse(r.executed_at));
    const wantTimes = want
      .map((t) => t.ms)
      .sort((a, b) => b - a)
      .slice(0, filters.limit);
    expect(times).toEqual(wantTimes);
    const wantIds = new Set(want.map((t) => t.id));
    for (const r of page.results) expect(wantIds.has(r.execution_id)).toBe(true);
  });
});
