import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ANCHOR_FILE } from './files.js';
import { hmacHex, hmacMatches } from './key.js';

// The anchor (`audit-anchor.json`, beside the day files): where the chain starts (after the days
// retention removed) and, per day, how many entries its file had and the last one's hash, signed
// with the audit key. A hash chain alone cannot show that its newest entries or files are gone;
// the anchor can, and cannot be rewritten to match without the key.

const HASH = z.string().regex(/^[0-9a-f]{64}$/);
const FILE = z.string().regex(/^audit-\d{4}-\d{2}-\d{2}\.jsonl$/);

const daySchema = z.strictObject({
  count: z.number().int().min(1),
  last_hash: HASH,
  /** The file's size after that entry: where a writer resumes counting (not checked by verify). */
  bytes: z.number().int().min(0),
});
export type AnchorDay = z.infer<typeof daySchema>;

const signedSchema = z.strictObject({
  version: z.literal(2),
  start_hash: HASH,
  removed_through: FILE.nullable(),
  days: z.record(z.string().regex(/^\d{4}-\d{2}-\d{2}$/), daySchema),
  hmac: HASH,
});

/** Written by retention before anchors were signed: only where the chain starts. */
const legacySchema = z.strictObject({ removed_through: FILE, last_hash: HASH });

export interface Anchor {
  /** The `prev_hash` of the first entry kept: the genesis hash, or the last one retention removed. */
  start_hash: string;
  /** The newest day file retention removed (files up to it are gone, or about to be). */
  removed_through: string | null;
  /** By UTC day (`YYYY-MM-DD`). */
  days: Record<string, AnchorDay>;
}

export type AnchorFile =
  | { readonly kind: 'none' }
  | { readonly kind: 'legacy'; readonly anchor: Anchor }
  | { readonly kind: 'signed'; readonly anchor: Anchor; readonly hmac: string };

/** The anchor file of `dir` as it is on disk; throws naming the file when it is not an anchor. */
export function readAnchorFile(dir: string): AnchorFile {
  let text: string;
  try {
    text = readFileSync(join(dir, ANCHOR_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${ANCHOR_FILE} is not valid JSON`);
  }
  const signed = signedSchema.safeParse(value);
  if (signed.success) {
    const { version: _, hmac, ...anchor } = signed.data;
    return { kind: 'signed', anchor, hmac };
  }
  const legacy = legacySchema.safeParse(value);
  if (legacy.success) {
    const { removed_through, last_hash } = legacy.data;
    return { kind: 'legacy', anchor: { start_hash: last_hash, removed_through, days: {} } };
  }
  throw new Error(`${ANCHOR_FILE} is not a valid anchor`);
}

/** The bytes the HMAC covers: the anchor's JSON in a fixed order, days sorted. */
function canonical(anchor: Anchor): string {
  const days: Record<string, AnchorDay> = {};
  for (const day of Object.keys(anchor.days).sort()) {
    const { count, last_hash, bytes } = anchor.days[day] as AnchorDay;
    days[day] = { count, last_hash, bytes };
  }
  return JSON.stringify({
    version: 2,
    start_hash: anchor.start_hash,
    removed_through: anchor.removed_through,
    days,
  });
}

export const anchorSigned = (anchor: Anchor, key: Buffer, hmac: string) =>
  hmacMatches(key, canonical(anchor), hmac);

/**
 * Replace the anchor: written whole to a file of its own, then renamed over it, so a reader or a
 * crash sees the old anchor or the new one, never half of one. No fsync: an anchor that lags its
 * files after a power loss reads as entries past the anchor, which verify accepts.
 */
export function writeAnchor(dir: string, anchor: Anchor, key: Buffer): void {
  const body = canonical(anchor);
  const temp = join(dir, `.${ANCHOR_FILE}.${process.pid}`);
  writeFileSync(temp, `${body.slice(0, -1)},"hmac":"${hmacHex(key, body)}"}\n`, { mode: 0o600 });
  renameSync(temp, join(dir, ANCHOR_FILE));
}
