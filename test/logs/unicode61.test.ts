// The PostgreSQL index's tokenizer against SQLite FTS5's unicode61 (index.db's): every code point
// between two letters, random mixed text, and tokens past FTS5's size limit cut as it cuts them.
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenize } from '../../src/logs/postgres/unicode61.js';

const db = new Database(':memory:');
db.exec(`CREATE VIRTUAL TABLE words USING fts5 (code);
  CREATE VIRTUAL TABLE words_seen USING fts5vocab (words, 'instance');`);
const insert = db.prepare('INSERT INTO words (rowid, code) VALUES (?, ?)');
const read = db.prepare('SELECT doc, term FROM words_seen ORDER BY doc, offset').raw();
const clear = db.prepare('DELETE FROM words');
afterAll(() => db.close());

/** FTS5's tokens of each text. */
function fts5(texts: readonly string[]): string[][] {
  const tokens = texts.map((): string[] => []);
  db.transaction(() => {
    texts.forEach((text, i) => {
      insert.run(i + 1, text);
    });
    for (const [doc, term] of read.iterate() as Iterable<[number, string]>) tokens[doc - 1]?.push(term);
    clear.run();
  })();
  return tokens;
}

describe('tokenize', () => {
  it('cuts and folds every assigned code point as FTS5 does (and a sample of the rest)', () => {
    // Planes 3 to 13 hold no characters: a sample of them is enough.
    const wanted = (cp: number) =>
      (cp < 0xd800 || cp > 0xdfff) && (cp < 0x30000 || cp >= 0xe0000 || cp % 97 === 0);
    const STEP = 50_000;
    const differ: string[] = [];
    for (let start = 0; start < 0x110000 && differ.length === 0; start += STEP) {
      const texts: string[] = [];
      for (let cp = start; cp < Math.min(start + STEP, 0x110000); cp++) {
        if (wanted(cp)) texts.push(`x${String.fromCodePoint(cp)}y`);
      }
      const expected = fts5(texts);
      texts.forEach((text, i) => {
        if (tokenize(text).join('\0') !== expected[i]?.join('\0'))
          differ.push(`U+${text.codePointAt(1)?.toString(16)}`);
      });
    }
    expect(differ).toEqual([]);
  }, 60_000);

  it('cuts random mixed text as FTS5 does', () => {
    let seed = 11;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pieces = ['a', 'Z', '9', ' ', '_', '-', '.', 'É', 'ß', 'İ', '\u0301', 'ж', 'Ж', '€', '😀', '𐐀'];
    const lone = ['\ud800', '\udc00', '\0', '\t', '中', 'ǅ', 'Ａ', '١'];
    const texts = Array.from({ length: 3000 }, () =>
      Array.from({ length: Math.floor(rand() * 30) }, () =>
        rand() < 0.9 ? pieces[Math.floor(rand() * pieces.length)] : lone[Math.floor(rand() * lone.length)],
      ).join(''),
    );
    const expected = fts5(texts);
    expect(texts.map(tokenize)).toEqual(expected);
  });

  it('keeps at most 32 KiB of a token, cutting where FTS5 cuts', () => {
    const texts = [
      'a'.repeat(32_768),
      `${'A'.repeat(40_000)} z`,
      'a'.repeat(101) + 'ж'.repeat(17_000),
      'жa'.repeat(12_000),
      '😀a'.repeat(9000),
      'É'.repeat(40_000),
    ];
    expect(texts.map(tokenize)).toEqual(fts5(texts));
  });
});
