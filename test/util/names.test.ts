// util/names: how file names are shown to the model (escaped, reversible for text).
import { describe, expect, it } from 'vitest';
import { shownName, unshownName } from '../../src/util/index.js';

describe('names as shown', () => {
  it('escapes backslashes, undecodable bytes, C0/C1, bidi and format controls; keeps the rest', () => {
    expect(shownName('café ☃ 😀.txt')).toBe('café ☃ 😀.txt');
    expect(shownName('a\\b')).toBe('a\\\\b');
    expect(shownName('esc\u001b[31m\nx\u007f')).toBe('esc\\x1b[31m\\x0ax\\x7f');
    expect(shownName('c1\u0085 rtl\u202e zw\u200b bom\ufeff')).toBe(
      'c1\\u0085 rtl\\u202e zw\\u200b bom\\ufeff',
    );
    expect(shownName('lone\ud800')).toBe('lone\\ud800');
    expect(shownName(Buffer.from([0x61, 0xff, 0xc3, 0xa9, 0xc3, 0x1b, 0xe2, 0x80]))).toBe(
      'a\\xffé\\xc3\\x1b\\xe2\\x80',
    );
    // Overlong and surrogate encodings are not UTF-8.
    expect(shownName(Buffer.from([0xc0, 0xaf, 0xed, 0xa0, 0x80]))).toBe('\\xc0\\xaf\\xed\\xa0\\x80');
  });

  it('is reversible for text, and says when a name is bytes', () => {
    for (const name of ['plain.txt', 'a\\b', 'esc\u001b[0m', 'rtl\u202e.exe', '\\x41 literal', 'c1\u0085'])
      expect(unshownName(shownName(name))).toBe(name);
    expect(shownName('\\x41 literal')).not.toBe(shownName('A literal'));
    expect(unshownName(shownName(Buffer.from([0x61, 0xff])))).toBeUndefined();
  });
});
