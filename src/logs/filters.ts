// What a search asks for and what it answers: the zod schema shared by the tool and the CLI.
import { z } from 'zod';
import { InvalidInputError } from '../errors/index.js';
import { LANGUAGES } from '../runtimes/index.js';

export const STATUSES = ['success', 'failed', 'timeout'] as const;
export const MAX_LIMIT = 500;

/** A query term needs a letter or digit to be a word the FTS index knows. */
export const HAS_WORD = /[\p{L}\p{N}]/u;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** `since` as ms: a date is midnight UTC, a date-time without a zone is UTC. Undefined if invalid. */
export function parseSince(value: string): number | undefined {
  const text = value.trim();
  let iso: string;
  if (DATE_ONLY.test(text)) iso = `${text}T00:00:00Z`;
  else if (DATE_TIME.test(text)) iso = /(Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`;
  else return undefined;
  const ms = Date.parse(iso.replace(' ', 'T'));
  return Number.isNaN(ms) ? undefined : ms;
}

/** The filters of `search_execution_logs` (and `codexec logs search`), validated at the edge. */
export const searchFiltersSchema = () =>
  z.object({
    language: z.enum(LANGUAGES).optional(),
    status: z.enum(STATUSES).optional().describe('failed: an error, non-zero exit or cancel'),
    query: z
      .string()
      .trim()
      .min(1)
      .max(1000)
      .refine((value) => HAS_WORD.test(value), 'must contain a letter or digit')
      .optional()
      .describe(
        'Words that must all appear in code, stdout, stderr or the script name, as words or their starts: "pandas read_csv"',
      ),
    since: z
      .string()
      .refine((value) => parseSince(value) !== undefined, 'expected a date (2026-02-01) or an ISO date-time')
      .optional()
      .describe('UTC date (2026-02-01) or ISO date-time: this and later'),
    session_id: z.string().min(1).optional(),
    script_name: z.string().min(1).max(200).optional().describe("a saved script's name: its runs"),
    limit: z.number().int().min(1).max(MAX_LIMIT).default(20),
  });

export type SearchFilters = z.output<ReturnType<typeof searchFiltersSchema>>;

export interface SearchResult {
  execution_id: string;
  session_id: string | null;
  language: string | null;
  code_preview: string;
  status: (typeof STATUSES)[number];
  exit_code: number | null;
  error_preview: string | null;
  duration_ms: number;
  executed_at: string;
  /** The saved script the run executed (run_script), if any. */
  script_name: string | null;
}

export interface SearchPage {
  results: SearchResult[];
  /** How many executions match, before `limit`. */
  total_count: number;
}

/** A query's terms: its whitespace-separated parts with a letter or digit (at least one). */
export function queryTerms(query: string): string[] {
  const terms = query.split(/\s+/).filter((term) => HAS_WORD.test(term));
  if (terms.length === 0) {
    throw new InvalidInputError(
      'query: must contain a letter or digit (search matches words in code and output)',
    );
  }
  return terms;
}
