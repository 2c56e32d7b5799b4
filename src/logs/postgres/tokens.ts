// Words for the PostgreSQL index, cut as SQLite FTS5's unicode61 tokenizer (index.db's) cuts them
// (unicode61.ts), so that search finds exactly what the SQLite index finds. Lexemes go to
// PostgreSQL as they are (a tsvector/tsquery literal: no parser, no dictionary, no stemming).
import { createHash } from 'node:crypto';
import { tokenize } from './unicode61.js';

/** PostgreSQL keeps lexemes under 2 KB; longer tokens are indexed by their start and re-checked. */
const LEXEME_BYTES = 1000;
/** A tsvector holds under 1 MB of lexemes; an entry with more is marked spilled (see SPILL). */
const VECTOR_BYTES = 900_000;
/** The one lexeme of a spilled entry: never a token (unicode61 splits on `~`). */
export const SPILL = '~';

export interface EntryWords {
  /** A tsvector literal: each distinct token once (cut to LEXEME_BYTES), or SPILL. */
  readonly vector: string;
  /** The tokens of code, stdout, stderr and script name: ` a b c ` per column, joined by `\n`. */
  readonly tokens: string;
  readonly spilled: boolean;
}

/** One query term: its tokens, in order (a phrase whose last token is a prefix, as FTS5's `"…"*`). */
export type TermTokens = readonly string[];

/** The words of an entry's code, stdout, stderr and script name. */
export function entryWords(code: string, stdout: string, stderr: string, script = ''): EntryWords {
  return wordsOf([tokenize(code), tokenize(stdout), tokenize(stderr), tokenize(script)]);
}

/** The tokens of each query term (FTS5 tokenizes a quoted phrase with the same tokenizer). */
export function termTokens(terms: readonly string[]): TermTokens[] {
  return terms.map(tokenize);
}

function wordsOf(columns: string[][]): EntryWords {
  const tokens = columns.map((list) => (list.length === 0 ? ' ' : ` ${list.join(' ')} `)).join('\n');
  const distinct = new Set<string>();
  for (const list of columns) for (const token of list) distinct.add(lexeme(token));
  let bytes = 0;
  const quoted: string[] = [];
  for (const word of distinct) {
    bytes += Buffer.byteLength(word) + 8;
    quoted.push(quoteLexeme(word));
  }
  if (bytes > VECTOR_BYTES) return { vector: quoteLexeme(SPILL), tokens, spilled: true };
  return { vector: quoted.join(' '), tokens, spilled: false };
}

/** A token as a lexeme: whole, or its first LEXEME_BYTES bytes (cut at a character boundary). */
export function lexeme(token: string): string {
  if (token.length * 3 <= LEXEME_BYTES || Buffer.byteLength(token) <= LEXEME_BYTES) return token;
  let end = LEXEME_BYTES;
  const bytes = Buffer.from(token);
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--; // not inside a character
  return bytes.subarray(0, end).toString('utf8');
}

export function isCut(token: string): boolean {
  return lexeme(token) !== token;
}

/** A lexeme in tsvector/tsquery syntax: quoted, with `'` and `\` escaped. */
export function quoteLexeme(word: string): string {
  return `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

// Facet lexemes: who ran an entry, its language and status, beside its words (index.db keeps
// the same as FTS tokens), so that a text search with these filters is answered by the GIN index
// alone. `~` is never in a token. Principal and language are hashed: any text, a bounded lexeme;
// insertBatch computes the same in SQL (FACETS_SQL).

export function ownerLexeme(principal: string): string {
  return `~o${sha256(principal)}`;
}

export function languageLexeme(language: string): string {
  return `~l${sha256(language)}`;
}

export function statusLexeme(status: string): string {
  return `~s${status}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The facet lexemes of row `r` (principal, status) with its resolved `language`, in SQL. */
export function facetsSql(row: string, language: string): string {
  const sha = (text: string) => `encode(sha256(convert_to(${text}, 'UTF8')), 'hex')`;
  return (
    `array_to_tsvector(array_remove(ARRAY['~o' || ${sha(`${row}.principal`)}, '~s' || ${row}.status, ` +
    `'~l' || ${sha(language)}], NULL))`
  );
}
