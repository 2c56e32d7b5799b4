import type { Node } from 'web-tree-sitter';

/**
 * A word as the command receives it, as far as the text tells: quotes removed, backslash escapes
 * applied, `$'…'` decoded. What only running the line would tell (`$HOME`, `$(…)`, `$((…))`, globs,
 * braces) stays as written, so a rule can still name it (`rm -rf "$HOME"` reads `rm -rf $HOME`).
 */
export function wordText(node: Node): string {
  switch (node.type) {
    case 'word':
      return unescapeBare(node.text);
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'ansi_c_string':
      return decodeAnsiC(node.text.slice(2, -1));
    case 'string':
      return joinParts(node, 1, unescapeDoubleQuoted);
    case 'concatenation':
      return joinParts(node, 0, unescapeBare);
    case 'command_name':
    case 'translated_string': {
      const inner = node.namedChild(0);
      return inner ? wordText(inner) : node.text;
    }
    default:
      return node.text;
  }
}

/**
 * The parts of a quoted string or a concatenation, each read as a word; text between them (which
 * the grammar leaves out of the tree, like a lone `$` in "a$") is literal. `quote`: delimiter width.
 */
function joinParts(node: Node, quote: number, literal: (text: string) => string): string {
  const text = node.text;
  let at = quote;
  let out = '';
  for (const part of node.namedChildren) {
    if (!part) continue;
    const from = part.startIndex - node.startIndex;
    out += literal(text.slice(at, from));
    out += part.type === 'string_content' ? literal(part.text) : wordText(part);
    at = part.endIndex - node.startIndex;
  }
  return out + literal(text.slice(at, text.length - quote));
}

/** Outside quotes a backslash keeps the next character literally; before a newline it joins lines. */
export function unescapeBare(value: string): string {
  return value.replace(/\\(\n|[\s\S])/g, (_all, next: string) => (next === '\n' ? '' : next));
}

/** Inside double quotes a backslash escapes only $ ` " \ and newline; elsewhere it stays. */
export function unescapeDoubleQuoted(value: string): string {
  return value.replace(/\\([$`"\\\n])/g, (_all, next: string) => (next === '\n' ? '' : next));
}

const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/** Bash's ANSI-C quoting, `$'…'`: \xHH, \uHHHH, \UHHHHHHHH, \nnn (octal), \cX and the letters. */
export function decodeAnsiC(value: string): string {
  const escapes =
    /\\(?:x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|([0-7]{1,3})|c([\s\S])|([\s\S]))/g;
  return value.replace(
    escapes,
    (all, hex?: string, u4?: string, u8?: string, oct?: string, ctl?: string, ch?: string) => {
      const code = hex ?? u4 ?? u8;
      if (code !== undefined) return fromCodePoint(Number.parseInt(code, 16));
      if (oct !== undefined) return String.fromCharCode(Number.parseInt(oct, 8) & 0xff);
      if (ctl !== undefined) return String.fromCharCode(ctl.toUpperCase().charCodeAt(0) & 0x1f);
      return (ch !== undefined && SIMPLE_ESCAPES[ch]) || all;
    },
  );
}

function fromCodePoint(code: number): string {
  return code <= 0x10ffff ? String.fromCodePoint(code) : '';
}
