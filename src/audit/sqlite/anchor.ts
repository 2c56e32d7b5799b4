import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { hmacHex, hmacMatches } from '../key.js';
import { ANCHOR_FILE } from './files.js';

// The anchor (`audit-anchor.json`, beside the day files): where the chain starts (after the days
// retention removed) and, per day, how many entries its file had and the last one's hash, signed
// with the audit key. A hash chain alone cannot show that its newest entries or files are gone;
// the anchor can, and cannot be rewritten to match without the key. Two JSON lines: a head of one
// page (4096 bytes, space-padded: the newest day, the body's sha256, the HMAC), then the body.

const HASH = z.string().regex(/^[0-9a-f]{64}$/);
const FILE = z.string().regex(/^audit-\d{4}-\d{2}-\d{2}\.jsonl$/);
const DAY = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

const daySchema = z.strictObject({
  count: z.number().int().min(1),
  last_hash: HASH,
  /** The file's size after that entry: where a writer resumes counting (not checked by verify). */
  bytes: z.number().int().min(0),
});
export type AnchorDay = z.infer<typeof daySchema>;

/** The head: the anchor's first page, rewritten in place (one page is written all or nothing). */
const headSchema = z.strictObject({
  version: z.literal(2),
  body_sha256: HASH,
  /** The newest day and its record; null before the first entry. */
  day: DAY.nullable(),
  last: daySchema.nullable(),
  hmac: HASH,
});

/** The body, after the first page: replaced whole (rename) when a day starts or retention runs. */
const bodySchema = z.strictObject({
  start_hash: HASH,
  removed_through: FILE.nullable(),
  /** Every day but the newest. */
  days: z.record(DAY, daySchema),
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
  | {
      readonly kind: 'signed';
      readonly anchor: Anchor;
      /** What the HMAC covers, the HMAC, and the body as on disk (a writer keeps it if unchanged). */
      readonly signed: string;
      readonly hmac: string;
      readonly body: string;
    };

const PAGE = 4096;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The anchor file of `dir` as it is on disk; throws naming the file when it is not an anchor. */
export function readAnchorFile(dir: string): AnchorFile {
  let text: string;
  try {
    text = readFileSync(join(dir, ANCHOR_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    throw error;
  }
  if (text.length < PAGE) {
    const legacy = legacySchema.safeParse(parseJson(text));
    if (!legacy.success) throw new Error(`${ANCHOR_FILE} is not a valid anchor`);
    const { removed_through, last_hash } = legacy.data;
    return { kind: 'legacy', anchor: { start_hash: last_hash, removed_through, days: {} } };
  }
  const head = headSchema.safeParse(parseJson(text.slice(0, PAGE)));
  const bodyText = text.slice(PAGE).replace(/\n$/, '');
  const body = bodySchema.safeParse(parseJson(bodyText));
  if (!head.success || !body.success || (head.data.day === null) !== (head.data.last === null)) {
    throw new Error(`${ANCHOR_FILE} is not a valid anchor`);
  }
  if (sha256(bodyText) !== head.data.body_sha256) {
    throw new Error(`${ANCHOR_FILE}'s days before the newest do not match its head: edited`);
  }
  const { day, last, hmac } = head.data;
  const anchor = { ...body.data, days: { ...body.data.days, ...(day && last && { [day]: last }) } };
  return { kind: 'signed', anchor, signed: layout(anchor).signed, hmac, body: bodyText };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${ANCHOR_FILE} is not valid JSON`);
  }
}

/**
 * The anchor as written: the body (every day but the newest) and the head's JSON without its
 * HMAC (the newest day, and the body's sha256), which is what the HMAC covers.
 */
function layout(anchor: Anchor): { readonly body: string; readonly signed: string } {
  const sorted = Object.keys(anchor.days).sort();
  const record = (day: string) => {
    const { count, last_hash, bytes } = anchor.days[day] as AnchorDay;
    return { count, last_hash, bytes };
  };
  const days: Record<string, AnchorDay> = {};
  for (const day of sorted.slice(0, -1)) days[day] = record(day);
  const body = JSON.stringify({
    start_hash: anchor.start_hash,
    removed_through: anchor.removed_through,
    days,
  });
  const newest = sorted.at(-1);
  const signed = JSON.stringify({
    version: 2,
    body_sha256: sha256(body),
    day: newest ?? null,
    last: newest === undefined ? null : record(newest),
  });
  return { body, signed };
}

export const anchorSigned = (file: { signed: string; hmac: string }, key: Buffer) =>
  hmacMatches(key, file.signed, file.hmac);

/**
 * Write the anchor; `bodyOnDisk` is the body the file holds now (as read or last written under
 * the lock). The usual change, the newest day's record, rewrites the first page in place: one
 * page is written all or nothing (a writer killed mid-write leaves the old head or the new), and
 * an in-place write of an existing page costs ~0.03 ms here, a rename ~0.5-1.7 ms (ext4 writes a
 * replaced file's data out first). A new body (a new day, retention) is written whole and renamed
 * into place. No fsync: after a power loss the anchor may lag its files, which verify accepts.
 * Returns the body now on disk.
 */
export function writeAnchor(
  dir: string,
  anchor: Anchor,
  key: Buffer,
  bodyOnDisk: string | undefined,
): string {
  const { body, signed } = layout(anchor);
  const head = `${signed.slice(0, -1)},"hmac":"${hmacHex(key, signed)}"}`;
  if (head.length >= PAGE) throw new Error(`${ANCHOR_FILE}'s head outgrew its page`);
  const page = `${head.padEnd(PAGE - 1)}\n`;
  const path = join(dir, ANCHOR_FILE);
  if (body === bodyOnDisk) {
    const fd = openSync(path, 'r+');
    try {
      if (writeSync(fd, page, 0) !== PAGE) throw new Error(`short write to ${ANCHOR_FILE}`);
    } finally {
      closeSync(fd);
    }
    return body;
  }
  const temp = join(dir, `.${ANCHOR_FILE}.${process.pid}`);
  writeFileSync(temp, `${page}${body}\n`, { mode: 0o600 });
  renameSync(temp, path);
  return body;
}
