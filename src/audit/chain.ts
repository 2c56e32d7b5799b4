import { createHash } from 'node:crypto';
import type { AuditAttempt } from '../policy/index.js';
import { isoTime } from '../util/index.js';
import { hmacHex } from './key.js';

// The hash chain: each line's `hash` is sha256 over the line's JSON without `hash` and `hmac`
// (which ends with `prev_hash`), so changing, removing or reordering any entry breaks every link
// after it; `hmac` is HMAC-SHA256 of `hash` under the audit key, so a changed entry cannot be
// re-hashed and re-linked without the key.

/** The `prev_hash` of the very first entry. */
export const GENESIS = '0'.repeat(64);

/** Input longer than this is kept as its first characters, with its full sha256 beside it. */
export const MAX_INPUT_CHARS = 100_000;
const SUMMARY_CHARS = 500;

/** The fields of an entry, in the order they are written and hashed. */
export const FIELDS = [
  'type',
  'tool',
  'execution_id',
  'session_id',
  'runtime',
  'input_code',
  'input_sha256',
  'input_truncated',
  'output_summary',
  'exit_code',
  'duration_ms',
  'approved',
  'approved_by',
  'decided_by',
  'rule',
  'principal',
  'tool_calls',
  'tool_calls_omitted',
  'network',
  'at',
  'prev_hash',
] as const;

/**
 * The fields of entries written before they named their principal and tool calls: still verified
 * as they are.
 */
const FIELDS_BEFORE_PRINCIPAL = FIELDS.filter(
  (field) =>
    field !== 'principal' &&
    field !== 'tool_calls' &&
    field !== 'tool_calls_omitted' &&
    field !== 'network' &&
    field !== 'decided_by',
);
/**
 * Fields present only when they say something: `decided_by` (the dashboard's decider),
 * `tool_calls_omitted` (a run that left tool calls out), `network` (a run of the egress allowlist
 * that made connections).
 */
const OPTIONAL = ['decided_by', 'tool_calls_omitted', 'network'] as const;
/** FIELDS without each subset of the optional ones (signed entries). */
const SIGNED_SHAPES = subsets(OPTIONAL).map((left) => FIELDS.filter((field) => !left.includes(field)));
/** Entries written before they were signed had no optional field. */
const FIELDS_WITHOUT_OPTIONAL = FIELDS.filter((field) => !(OPTIONAL as readonly string[]).includes(field));

/** Every subset of `items` (the empty one first). */
function subsets(items: readonly string[]): string[][] {
  const all: string[][] = [[]];
  for (const item of items) for (const subset of all.slice()) all.push([...subset, item]);
  return all;
}

export type AuditEntry = Record<(typeof FIELDS)[number] | 'hash' | 'hmac', unknown>;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The JSON line (with its newline) for an attempt chained after `prevHash`, and its hash. */
export function chainLine(
  attempt: AuditAttempt,
  prevHash: string,
  at: Date,
  key: Buffer,
): { readonly line: string; readonly hash: string } {
  const { body, hash, hmac } = chainEntry(attempt, prevHash, at, key);
  return { line: `${JSON.stringify({ ...body, hash, hmac })}\n`, hash };
}

/**
 * An attempt's entry chained after `prevHash`: its fields (what `hash` covers, in order, ending
 * with `prev_hash`), that JSON as hashed, its hash and HMAC. The file trail writes the fields with
 * the hash and HMAC as one line; the postgres trail keeps the same JSON in a row.
 */
export function chainEntry(
  attempt: AuditAttempt,
  prevHash: string,
  at: Date,
  key: Buffer,
): {
  readonly body: Partial<Omit<AuditEntry, 'hash' | 'hmac'>>;
  readonly unhashed: string;
  readonly hash: string;
  readonly hmac: string;
} {
  const body = {
    type: 'code_execution',
    tool: attempt.tool,
    execution_id: attempt.execution_id,
    session_id: attempt.session_id,
    runtime: attempt.runtime,
    input_code: attempt.input_code.slice(0, MAX_INPUT_CHARS),
    input_sha256: sha256(attempt.input_code),
    input_truncated: attempt.input_code.length > MAX_INPUT_CHARS,
    output_summary: attempt.output_summary.slice(0, SUMMARY_CHARS),
    exit_code: attempt.exit_code,
    duration_ms: attempt.duration_ms,
    approved: attempt.approved,
    approved_by: attempt.approved_by,
    ...(attempt.decided_by !== undefined && { decided_by: attempt.decided_by }),
    rule: attempt.rule,
    principal: attempt.principal,
    tool_calls: attempt.tool_calls,
    ...(attempt.tool_calls_omitted && { tool_calls_omitted: attempt.tool_calls_omitted }),
    ...(attempt.network && { network: attempt.network }),
    at: isoTime(at),
    prev_hash: prevHash,
  } satisfies Partial<Omit<AuditEntry, 'hash' | 'hmac'>>;
  const unhashed = JSON.stringify(body);
  const hash = sha256(unhashed);
  return { body, unhashed, hash, hmac: hmacHex(key, hash) };
}

export type LineCheck =
  | {
      readonly ok: true;
      readonly prevHash: string;
      readonly hash: string;
      /** Absent on entries written before entries were signed. */
      readonly hmac: string | undefined;
    }
  | { readonly ok: false; readonly torn: boolean; readonly reason: string };

/**
 * The fields a line may have: signed (with or without each optional field), unsigned (before
 * HMACs), or from before `principal`.
 */
const SHAPES = [
  ...SIGNED_SHAPES.map((fields) => [...fields, 'hash', 'hmac']),
  [...FIELDS_WITHOUT_OPTIONAL, 'hash'],
  [...FIELDS_BEFORE_PRINCIPAL, 'hash'],
].map((keys) => keys.join(','));

/**
 * Check one line on its own: well-formed, exactly our fields in our order, and its hash right.
 * Whether it links to the line before, and its HMAC, are the caller's checks.
 */
export function checkLine(text: string): LineCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, torn: true, reason: 'not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, torn: false, reason: 'not a JSON object' };
  }
  const entry = value as Record<string, unknown>;
  const keys = Object.keys(entry);
  if (!SHAPES.includes(keys.join(','))) {
    return { ok: false, torn: false, reason: `fields are not the audit entry's (${keys.join(', ')})` };
  }
  const { hash, hmac, ...body } = entry;
  if (typeof hash !== 'string' || typeof body.prev_hash !== 'string') {
    return { ok: false, torn: false, reason: 'hash or prev_hash is not a string' };
  }
  if (hmac !== undefined && typeof hmac !== 'string')
    return { ok: false, torn: false, reason: 'hmac is not a string' };
  const actual = sha256(JSON.stringify(body));
  if (actual !== hash) return { ok: false, torn: false, reason: 'hash does not match the entry' };
  return { ok: true, prevHash: body.prev_hash, hash, hmac };
}
