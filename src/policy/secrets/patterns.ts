// The secret shapes the filter knows. Each has a full pattern (what is masked) and a prefix
// pattern (what may still grow into a match, tested against the end of the text seen so far).
// Every quantifier is bounded, so a match and a held-back prefix are both bounded in length
// (`maxLength`), and no pattern can backtrack without bound (no ReDoS).

export interface SecretPattern {
  readonly id: string;
  /** Regex source of a whole secret. */
  readonly full: string;
  /**
   * Regex source matching every non-empty prefix of a possible match that could still grow
   * (a superset is safe: it only holds back more), anchored at the text's end by the caller.
   */
  readonly prefix: string;
  /** No match and no held-back prefix is longer than this (characters). */
  readonly maxLength: number;
}

/**
 * `first` then `rest`, where `first` does not follow a token character: a token glued to a longer
 * word is not one (`tasks-…`). The look-behind comes after the first character so the regex
 * engine can still skip ahead to candidates by that character (it cannot past a look-behind).
 */
function wordStart(first: string, rest: string, word = 'A-Za-z0-9_-'): string {
  return `${first}(?<![${word}]${first})${rest}`;
}
/** The PEM body a key block may have: 16 KiB holds an 8192-bit RSA key with room to spare. */
const PEM_BODY = 16_384;

/** `(?:x(?:y(?:z…)?)?)?` — every prefix of `literal` (escaped), then `tail` after the whole of it. */
export function nestedPrefix(literal: string, tail = ''): string {
  let out = tail;
  for (let i = literal.length - 1; i >= 0; i--) {
    const char = escapeRegex(literal[i] as string);
    out = out === '' ? char : `${char}(?:${out})?`;
  }
  return out;
}

export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

export const PATTERNS: readonly SecretPattern[] = [
  {
    // OpenAI and Anthropic keys: sk-…, sk-proj-…, sk-ant-api03-… (the rest of the charset covers them).
    id: 'sk',
    full: wordStart('s', 'k-[A-Za-z0-9_-]{20,400}'),
    prefix: wordStart('s', `(?:${nestedPrefix('k-', '[A-Za-z0-9_-]{0,399}')})?`),
    maxLength: 403,
  },
  {
    // GitHub tokens: ghp_ (classic), gho_, ghu_, ghs_, ghr_.
    id: 'github_token',
    full: wordStart('g', 'h[pousr]_[A-Za-z0-9]{36,255}'),
    prefix: wordStart('g', '(?:h(?:[pousr](?:_[A-Za-z0-9]{0,254})?)?)?'),
    maxLength: 259,
  },
  {
    id: 'github_pat',
    full: wordStart('g', 'ithub_pat_[A-Za-z0-9_]{22,255}'),
    prefix: wordStart('g', `(?:${nestedPrefix('ithub_pat_', '[A-Za-z0-9_]{0,254}')})?`),
    maxLength: 266,
  },
  {
    // AWS access key ids (long-lived AKIA…, temporary ASIA…).
    id: 'aws_access_key',
    full: wordStart('A', '[KS]IA[0-9A-Z]{16}', 'A-Za-z0-9'),
    prefix: wordStart('A', '(?:[KS](?:I(?:A[0-9A-Z]{0,15})?)?)?', 'A-Za-z0-9'),
    maxLength: 20,
  },
  {
    id: 'slack',
    full: wordStart('x', 'ox[abposr]-[A-Za-z0-9-]{10,255}'),
    prefix: wordStart('x', '(?:o(?:x(?:[abposr](?:-[A-Za-z0-9-]{0,254})?)?)?)?'),
    maxLength: 260,
  },
  {
    // header.payload.signature, both JSON parts base64url of `{"…` (eyJ); an empty signature too.
    id: 'jwt',
    full: wordStart('e', 'yJ[A-Za-z0-9_-]{1,1000}\\.eyJ[A-Za-z0-9_-]{1,8000}\\.[A-Za-z0-9_-]{0,1000}'),
    prefix: wordStart(
      'e',
      `(?:${nestedPrefix('yJ', `[A-Za-z0-9_-]{0,1000}(?:\\.(?:${nestedPrefix('eyJ', '[A-Za-z0-9_-]{0,8000}(?:\\.[A-Za-z0-9_-]{0,1000})?')})?)?`)})?`,
    ),
    maxLength: 10_008,
  },
  {
    // The whole block, from its BEGIN line to its END line.
    id: 'private_key',
    full: `-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[\\s\\S]{0,${PEM_BODY}}?-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----`,
    prefix: [
      `-{1,5}(?:${nestedPrefix('BEGIN', ' [A-Z0-9 -]{0,60}')})?`,
      // Inside a block: anything up to its END line (not past it), then maybe a partial END line.
      `-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----(?:(?!-----END)[\\s\\S]){0,${PEM_BODY}}(?:-----END[A-Z0-9 -]{0,60})?`,
    ].join('|'),
    maxLength: 2 * 60 + 15 + PEM_BODY,
  },
  {
    // scheme://user:PASS@host: only PASS is masked (the mask keeps `://user:` and `@`).
    id: 'url_password',
    full: '://[^\\s:/@]{0,128}:[^\\s@/]{1,256}@',
    prefix: ':(?:/(?:/(?:[^\\s:/@]{0,128}(?::[^\\s@/]{0,256})?)?)?)?',
    maxLength: 3 + 128 + 1 + 256 + 1,
  },
];

/** What a match becomes. A URL keeps all but its password. */
export function maskOf(match: string): string {
  if (match.startsWith('://') && match.endsWith('@')) {
    const colon = match.indexOf(':', 3);
    if (colon !== -1) return `${match.slice(0, colon + 1)}***@`;
  }
  return '***';
}
