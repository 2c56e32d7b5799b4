// Words cut as SQLite FTS5's unicode61 tokenizer cuts them (index.db's, with its defaults), in
// TypeScript: PostgreSQL's own parser would split `/tmp/data.csv`, `foo-bar` or `3.14` otherwise,
// and the PostgreSQL index must find exactly what index.db finds. The character tables are
// FTS5's own, read out of it by scripts/unicode61-tables.mjs.
import { FOLDS, REMOVED, SEPARATORS } from './unicode61-tables.js';

/** FTS5 keeps at most this many bytes of a token (FTS5_MAX_TOKEN_SIZE); the rest is dropped. */
const MAX_TOKEN_BYTES = 32_768;
/** What `fold` answers for a character folded to nothing (a diacritic). */
const REMOVE = -1;

interface Tables {
  /** Separator ranges, sorted: starts and (exclusive) ends. */
  readonly starts: Uint32Array;
  readonly ends: Uint32Array;
  /** Characters that fold to another (or to nothing: REMOVE). */
  readonly folds: Map<number, number>;
  /** Below 128: -2 for a separator, else the folded character. */
  readonly ascii: Int16Array;
}

const SEPARATOR = -2;
let tables: Tables | undefined;

/** The tokens of `text` in order, folded (lower case, Latin diacritics removed) as FTS5 stores them. */
export function tokenize(text: string): string[] {
  tables ??= load();
  const { ascii } = tables;
  const tokens: string[] = [];
  let built = ''; // the current token up to `from`, where characters start to be copied as they are
  let from = -1; // -1: between tokens
  for (let i = 0; i < text.length; i++) {
    let cp = text.charCodeAt(i);
    let width = 1;
    let to: number;
    if (cp < 128) {
      to = ascii[cp] as number;
    } else {
      if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < text.length) {
        const low = text.charCodeAt(i + 1);
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          width = 2;
        }
      }
      to = classify(cp);
    }
    if (to === SEPARATOR) {
      if (from >= 0) push(tokens, built + text.slice(from, i));
      built = '';
      from = -1;
    } else {
      if (from < 0) from = i;
      if (to !== cp) {
        built += text.slice(from, i) + (to === REMOVE ? '' : String.fromCodePoint(to));
        from = i + width;
      }
    }
    i += width - 1;
  }
  if (from >= 0) push(tokens, built + text.slice(from));
  return tokens;
}

/** A token as FTS5 keeps it: never empty, cut to MAX_TOKEN_BYTES (perhaps inside a character). */
function push(tokens: string[], token: string): void {
  if (token === '') return;
  if (token.length * 3 > MAX_TOKEN_BYTES && Buffer.byteLength(token) > MAX_TOKEN_BYTES) {
    // Decoded as SQLite's bytes reach JavaScript: a character cut in two becomes U+FFFD.
    tokens.push(Buffer.from(token).subarray(0, MAX_TOKEN_BYTES).toString('utf8'));
    return;
  }
  tokens.push(token);
}

/** SEPARATOR, REMOVE, or the character `cp` folds to (itself when none). */
function classify(cp: number): number {
  const { starts, ends, folds } = tables as Tables;
  // Lone surrogates reach SQLite as U+FFFD, a separator.
  if (cp >= 0xd800 && cp <= 0xdfff) return SEPARATOR;
  let low = 0;
  let high = starts.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (cp < (starts[mid] as number)) high = mid - 1;
    else if (cp >= (ends[mid] as number)) low = mid + 1;
    else return SEPARATOR;
  }
  return folds.get(cp) ?? cp;
}

function numbers(text: string): number[] {
  return text.split(' ').map((digits) => Number.parseInt(digits, 36));
}

function load(): Tables {
  const separators = numbers(SEPARATORS);
  const starts = new Uint32Array(separators.length / 2);
  const ends = new Uint32Array(separators.length / 2);
  let at = 0;
  for (let i = 0; i < starts.length; i++) {
    starts[i] = at + (separators[2 * i] as number);
    at = (starts[i] as number) + (separators[2 * i + 1] as number);
    ends[i] = at;
  }
  const folds = new Map<number, number>();
  const runs = numbers(FOLDS);
  let start = 0;
  for (let i = 0; i < runs.length; i += 4) {
    const [delta, count, stride, shift] = runs.slice(i, i + 4) as [number, number, number, number];
    start += delta;
    for (let n = 0; n < count; n++) folds.set(start + n * stride, start + n * stride + shift);
  }
  let removed = 0;
  for (const delta of numbers(REMOVED)) {
    removed += delta;
    folds.set(removed, REMOVE);
  }
  const ascii = new Int16Array(128);
  tables = { starts, ends, folds, ascii };
  for (let cp = 0; cp < 128; cp++) ascii[cp] = classify(cp);
  return tables;
}
