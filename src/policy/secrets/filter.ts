import { escapeRegex, maskOf, nestedPrefix, PATTERNS, type SecretPattern } from './patterns.js';

/** Masks secrets in one stream written in pieces; a secret split across writes is masked too. */
export interface StreamRedactor {
  /** What of `text` (with what was held back before it) is safe to pass on now, masked. */
  write(text: string): string;
  /** The stream ended: everything still held back, masked. The redactor may be written again. */
  end(): string;
}

export interface SecretsFilterOptions {
  /** Exact values to mask wherever they appear (environment values, the secrets file). */
  readonly values?: readonly string[];
  /** The secret shapes to look for (default: all of PATTERNS). */
  readonly patterns?: readonly SecretPattern[];
}

/**
 * How much of a value output must show before a stream holds back what may be the rest of it:
 * half of it, at least 8 characters. Held-back output is visible to whoever reads a live stream
 * (read_process_output): holding back from a value's first character would tell them, a
 * character at a time, what the value starts with. Half a value (after any public prefix such
 * as `sk-ant-api03-`) must be guessed blind instead; what a stream may then pass on unmasked is
 * a value split across two writes within its first half.
 */
function blindPart(value: string): number {
  const half = Math.max(8, Math.ceil(value.length / 2));
  // Never half a surrogate pair: output reaches the filter as whole characters.
  return isHighSurrogate(value.charCodeAt(half - 1)) ? half + 1 : half;
}

/** A value's prefixes from blindPart() characters on, as a regex: `abcdefgh(?:i(?:j)?)?`. */
function heldPrefix(value: string): string {
  const blind = blindPart(value);
  return `${escapeRegex(value.slice(0, blind))}(?:${nestedPrefix(value.slice(blind))})?`;
}

/** Characters before the held-back text kept for the patterns' look-behind (`tasks-…` is no key). */
const CONTEXT = 8;
/**
 * Possible secrets longer than this (JWTs, PEM blocks) get a prefix regex and a window of their
 * own: the rest are looked for only in the last few hundred characters of each write.
 */
const SHORT = 1024;

interface PrefixScan {
  readonly regex: RegExp;
  /** How far back from the end a possible secret of this regex can start. */
  readonly window: number;
}

/**
 * Every secret to mask, compiled once at start-up into two regexes: `full` finds whole secrets,
 * `prefix` finds the earliest start of a possible secret still open at the end of the text. A
 * stream holds back only from that start, so at most the longest match (the largest maxLength,
 * 16.5 K characters for a PEM block, usually nothing) waits for more output.
 */
export class SecretsFilter {
  /** How far back from the text's end a possible secret can start. */
  readonly maxLength: number;
  readonly valueCount: number;
  private readonly full: RegExp;
  private readonly prefixes: readonly PrefixScan[];

  constructor(options: SecretsFilterOptions = {}) {
    const patterns = options.patterns ?? PATTERNS;
    // Longest first: a value that starts another one must not hide the longer.
    const values = [...new Set(options.values ?? [])].filter(Boolean).sort((a, b) => b.length - a.length);
    this.valueCount = values.length;
    const full = [...values.map(escapeRegex), ...patterns.map((p) => p.full)];
    // No alternative at all: a regex that never matches.
    this.full = new RegExp(full.length ? full.join('|') : '(?!)', 'g');
    const short = [
      ...values
        .filter((v) => v.length > blindPart(v))
        .map((v) => ({ prefix: heldPrefix(v), maxLength: v.length })),
      ...patterns.filter((p) => p.maxLength <= SHORT),
    ];
    const groups = [short, ...patterns.filter((p) => p.maxLength > SHORT).map((p) => [p])];
    this.prefixes = groups
      .filter((group) => group.length > 0)
      .map((group) => ({
        regex: new RegExp(`(?:${group.map((p) => p.prefix).join('|')})$`, 'g'),
        window: Math.max(...group.map((p) => p.maxLength)),
      }));
    this.maxLength = Math.max(0, ...this.prefixes.map((p) => p.window));
  }

  /** A fresh streaming state (one per stream: stdout and stderr each have their own). */
  stream(): StreamRedactor {
    return new Redactor(this);
  }

  /** Mask every secret in a whole string. */
  redact(text: string): string {
    return this.scan(text, 0, true).text;
  }

  /**
   * Mask `text[from, to)` and find where a secret still open at the end of `text` starts
   * (`hold`; text.length when none). Characters before `from` are context only.
   */
  scan(text: string, from: number, final: boolean): { readonly text: string; readonly hold: number } {
    let hold = final ? text.length : this.openFrom(text, from);
    const full = this.full;
    full.lastIndex = from;
    let out = '';
    let last = from;
    for (let m = full.exec(text); m !== null; m = full.exec(text)) {
      const end = m.index + m[0].length;
      if (m.index >= hold) break;
      // A whole secret running into what may still grow: hold it all (bounded: it starts within
      // maxLength of `hold`, which is within maxLength of the end).
      if (end > hold) {
        hold = m.index;
        break;
      }
      out += text.slice(last, m.index) + maskOf(m[0]);
      last = end;
    }
    // Never split a surrogate pair between what is passed on and what is held.
    if (hold > last && hold < text.length && isHighSurrogate(text.charCodeAt(hold - 1))) hold -= 1;
    return { text: out + text.slice(last, hold), hold };
  }

  /** The earliest start, at or after `from`, of a possible secret not yet complete at the end. */
  private openFrom(text: string, from: number): number {
    let open = text.length;
    for (const { regex, window } of this.prefixes) {
      regex.lastIndex = Math.max(from, text.length - window);
      const m = regex.exec(text);
      if (m !== null && m.index < open) open = m.index;
    }
    return open;
  }
}

class Redactor implements StreamRedactor {
  /** Raw text already passed on, kept as look-behind context. */
  private before = '';
  /** Raw text that may be the start of a secret. */
  private held = '';

  constructor(private readonly filter: SecretsFilter) {}

  write(text: string): string {
    if (text === '') return '';
    return this.step(this.before + this.held + text, false);
  }

  end(): string {
    const out = this.held === '' ? '' : this.step(this.before + this.held, true);
    this.before = '';
    this.held = '';
    return out;
  }

  private step(text: string, final: boolean): string {
    const from = this.before.length;
    const { text: out, hold } = this.filter.scan(text, from, final);
    this.held = text.slice(hold);
    this.before = text.slice(Math.max(0, hold - CONTEXT), hold);
    return out;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
