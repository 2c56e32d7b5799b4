// File names as the model reads them: a name is whatever bytes code wrote, and text the model
// reads must not carry terminal escapes, bidi overrides, newlines or undecodable bytes. One
// reversible scheme: `\\` a backslash, `\xNN` the byte NN (an invalid UTF-8 byte, or a C0 control
// or DEL), `\uXXXX` the code point (C1 controls, bidi and other invisible format characters,
// line/paragraph separators, a lone surrogate). Every other character is shown as it is.
import { isUtf8 } from 'node:buffer';

const SHOWN_ESCAPED =
  '[\\x00-\\x1f\\x7f-\\x9f\\\\\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb]' +
  '|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';
const NEEDS = new RegExp(SHOWN_ESCAPED);
const EVERY = new RegExp(SHOWN_ESCAPED, 'g');

/** Whether `name` is shown differently from itself (the cheap test the walk makes per entry). */
export function needsShowing(name: string): boolean {
  return NEEDS.test(name);
}

/** `name` (a string, or raw bytes from readdir) with the characters above escaped. */
export function shownName(name: string | Buffer): string {
  if (typeof name === 'string') return NEEDS.test(name) ? name.replace(EVERY, escapeChar) : name;
  if (isUtf8(name)) return shownName(name.toString('utf8'));
  let out = '';
  for (let i = 0; i < name.length; ) {
    const length = sequenceLength(name, i);
    if (length === 0) out += `\\x${hex(name[i] as number, 2)}`;
    else out += shownName(name.toString('utf8', i, i + length));
    i += length || 1;
  }
  return out;
}

/** A path for a message: quoted, shown as above. */
export function quotedPath(path: string): string {
  return `"${shownName(path)}"`;
}

/**
 * The name `shown` stands for, when it is text (no `\xNN` of an undecodable byte); undefined
 * otherwise. Resource links are built from it: percent-encoding then carries the real name.
 */
export function unshownName(shown: string): string | undefined {
  if (!shown.includes('\\')) return shown;
  let out = '';
  for (let i = 0; i < shown.length; i++) {
    const char = shown[i] as string;
    if (char !== '\\') {
      out += char;
      continue;
    }
    const kind = shown[i + 1];
    if (kind === '\\') {
      out += '\\';
      i += 1;
    } else if (kind === 'x' || kind === 'u') {
      const digits = kind === 'x' ? 2 : 4;
      const code = Number.parseInt(shown.slice(i + 2, i + 2 + digits), 16);
      if (Number.isNaN(code) || (kind === 'x' && code >= 0x80)) return undefined;
      out += String.fromCharCode(code);
      i += 1 + digits;
    } else return undefined;
  }
  return out;
}

function escapeChar(char: string): string {
  if (char === '\\') return '\\\\';
  const code = char.charCodeAt(0);
  return code < 0x80 ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
}

function hex(value: number, digits: number): string {
  return value.toString(16).padStart(digits, '0');
}

/** Bytes of the well-formed UTF-8 sequence at `i` (RFC 3629), 0 when there is none. */
function sequenceLength(bytes: Buffer, i: number): number {
  const first = bytes[i] as number;
  if (first < 0x80) return 1;
  const cont = (k: number, low = 0x80, high = 0xbf) => {
    const byte = bytes[i + k];
    return byte !== undefined && byte >= low && byte <= high;
  };
  if (first >= 0xc2 && first <= 0xdf) return cont(1) ? 2 : 0;
  if (first >= 0xe0 && first <= 0xef) {
    const ok = cont(1, first === 0xe0 ? 0xa0 : 0x80, first === 0xed ? 0x9f : 0xbf) && cont(2);
    return ok ? 3 : 0;
  }
  if (first >= 0xf0 && first <= 0xf4) {
    const ok = cont(1, first === 0xf0 ? 0x90 : 0x80, first === 0xf4 ? 0x8f : 0xbf) && cont(2) && cont(3);
    return ok ? 4 : 0;
  }
  return 0;
}
