// Reading a JSON-RPC frame's top-level members from its two ends only, for frames too large to
// keep: the head of a frame is read forwards, its tail backwards. Neither recurses (hostile
// nesting cannot exhaust the stack) and each is linear in the window.

export type Scalar = string | number;

/** The top-level members the head shows before it runs out: complete scalar values, and names. */
export interface HeadMembers {
  readonly scalars: ReadonlyMap<string, Scalar>;
  readonly names: ReadonlySet<string>;
}

/** Top-level members of a truncated JSON object, as far as `text` shows them completely. */
export function readHead(text: string): HeadMembers {
  const scalars = new Map<string, Scalar>();
  const names = new Set<string>();
  let i = skipWs(text, 0);
  if (text[i] !== '{') return { scalars, names };
  i = skipWs(text, i + 1);
  while (text[i] === '"') {
    const key = readString(text, i);
    if (!key) break;
    i = skipWs(text, key.end);
    if (text[i] !== ':') break;
    i = skipWs(text, i + 1);
    names.add(key.value); // seen even when its value runs past the head: `result` marks a response
    const end = valueEnd(text, i);
    if (end === -1) break;
    const scalar = asScalar(text.slice(i, end));
    if (scalar !== undefined) scalars.set(key.value, scalar);
    i = skipWs(text, end);
    if (text[i] !== ',') break;
    i = skipWs(text, i + 1);
  }
  return { scalars, names };
}

/**
 * The value of `"id"` when it is the last member of the object `text` ends with (SDK clients
 * write `id` last), read backwards from the final `}`. A quote is a delimiter when an even
 * number of backslashes precede it: that holds anywhere in JSON, so the backwards read cannot
 * mistake escaped text inside a string for structure.
 */
export function readTailId(text: string): Scalar | undefined {
  let j = skipWsBack(text, text.length - 1);
  if (text[j] !== '}') return undefined;
  j = skipWsBack(text, j - 1);
  let start: number;
  if (text[j] === '"') {
    start = j - 1;
    while (start >= 0 && !(text[start] === '"' && evenBackslashesBefore(text, start))) start--;
    if (start < 0) return undefined;
  } else {
    start = j;
    while (start > 0 && /[0-9eE.+-]/.test(text[start - 1] as string)) start--;
  }
  const value = asScalar(text.slice(start, j + 1));
  if (value === undefined) return undefined;
  j = skipWsBack(text, start - 1);
  if (text[j] !== ':') return undefined;
  j = skipWsBack(text, j - 1);
  if (text.slice(j - 3, j + 1) !== '"id"' || !evenBackslashesBefore(text, j - 3)) return undefined;
  j = skipWsBack(text, j - 4);
  return text[j] === ',' || text[j] === '{' ? value : undefined;
}

/** A complete JSON string or number, decoded; anything else (or a cut-off token) is undefined. */
function asScalar(token: string): Scalar | undefined {
  if (!/^(?:"|-?\d)/.test(token)) return undefined;
  try {
    const value: unknown = JSON.parse(token);
    return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
      ? value
      : undefined;
  } catch {
    return undefined;
  }
}

/** The string starting at `i` (a `"`), decoded, and the index after it; undefined if cut off. */
function readString(text: string, i: number): { value: string; end: number } | undefined {
  const end = stringEnd(text, i);
  if (end === -1) return undefined;
  const value = asScalar(text.slice(i, end));
  return typeof value === 'string' ? { value, end } : undefined;
}

/** Index after the string starting at `i` (a `"`), or -1 when the text ends first. */
function stringEnd(text: string, i: number): number {
  for (let k = i + 1; k < text.length; k++) {
    if (text[k] === '\\') k++;
    else if (text[k] === '"') return k + 1;
  }
  return -1;
}

/** Index after the JSON value starting at `i`, or -1 when the text ends first. */
function valueEnd(text: string, i: number): number {
  const first = text[i];
  if (first === '"') return stringEnd(text, i);
  if (first === '{' || first === '[') {
    let depth = 0;
    for (let k = i; k < text.length; k++) {
      const c = text[k];
      if (c === '"') {
        k = stringEnd(text, k) - 1;
        if (k < 0) return -1;
      } else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) return k + 1;
      }
    }
    return -1;
  }
  // A bare scalar ends at a delimiter; one running into the end of the text may be cut off.
  let k = i;
  while (k < text.length && !/[\s,}\]]/.test(text[k] as string)) k++;
  return k < text.length && k > i ? k : -1;
}

function evenBackslashesBefore(text: string, i: number): boolean {
  let n = 0;
  while (i - 1 - n >= 0 && text[i - 1 - n] === '\\') n++;
  return n % 2 === 0;
}

function skipWs(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i;
}

function skipWsBack(text: string, j: number): number {
  while (j >= 0 && /\s/.test(text[j] as string)) j--;
  return j;
}
