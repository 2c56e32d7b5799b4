import type { ParseError } from 'jsonc-parser';
import { ConfigError } from '../errors/index.js';

/** The file's text with codexec's entry in it, and whether that changed anything. */
export interface Merged {
  readonly text: string;
  readonly changed: boolean;
  /** Something the user should know about the rewrite (lost comments). */
  readonly note?: string;
}

// The parsers are loaded by the first merge, not with the module: `codexec serve` loads this module
// (its command line names CLIENTS) and should not hold them in memory.

/** Key order does not matter when telling whether an entry is already there. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => a.localeCompare(b)))
      : item,
  );
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Set `doc[key][name] = entry` in a JSON (with comments) file's text, by edits: everything else,
 * comments and formatting included, stays as it was.
 */
export async function mergeJson(
  path: string,
  text: string | undefined,
  key: string,
  name: string,
  entry: unknown,
): Promise<Merged> {
  const { applyEdits, modify, parse, parseTree, printParseErrorCode } = await import('jsonc-parser');
  const source = text?.trim() ? text : '{}\n';
  const errors: ParseError[] = [];
  const doc: unknown = parse(source, errors, { allowTrailingComma: true });
  const [error] = errors;
  if (error) {
    throw new ConfigError(
      `${path} is not valid JSON (${printParseErrorCode(error.error)} at offset ${error.offset}); fix it, then run setup again`,
    );
  }
  if (!isObject(doc))
    throw new ConfigError(`${path} does not hold a JSON object; fix it, then run setup again`);
  const servers = doc[key];
  if (servers !== undefined && !isObject(servers)) {
    throw new ConfigError(`${path}: "${key}" is not an object; fix it, then run setup again`);
  }
  if (servers && canonical(servers[name]) === canonical(entry)) return { text: source, changed: false };
  const appended =
    servers && servers[name] === undefined ? appendEntry(source, key, name, entry, parseTree) : undefined;
  const merged =
    appended ??
    applyEdits(
      source,
      modify(source, [key, name], entry, { formattingOptions: { insertSpaces: true, tabSize: 2 } }),
    );
  return { text: merged.endsWith('\n') ? merged : `${merged}\n`, changed: true };
}

/**
 * A new entry after the last one of `doc[key]`, indented as that one, on lines of its own: the
 * other entries, and each comment on the line it was on, stay exactly as written (the formatter
 * jsonc-parser's modify runs reflows the line it edits, a neighbour's one-line entry with it).
 * Undefined where there is no last entry to follow (modify then writes the first).
 */
function appendEntry(
  source: string,
  key: string,
  name: string,
  entry: unknown,
  parseTree: typeof import('jsonc-parser').parseTree,
): string | undefined {
  const root = parseTree(source, [], { allowTrailingComma: true });
  const servers = root?.children?.find((property) => property.children?.[0]?.value === key)?.children?.[1];
  const last = servers?.children?.at(-1);
  if (!last) return undefined;
  const end = last.offset + last.length;
  const lineStart = source.lastIndexOf('\n', last.offset) + 1;
  const indent = /^[ \t]*/.exec(source.slice(lineStart, last.offset))?.[0] ?? '';
  const lineEnd = source.indexOf('\n', end);
  const at = lineEnd === -1 ? source.length : lineEnd;
  // Only where the last entry ends its line (a comma, a comment at most after it); a comma the
  // file already has there (a trailing comma) is kept, not doubled.
  const rest = source.slice(end, at);
  if (!/^\s*,?\s*(\/\/.*|\/\*.*\*\/\s*)?\r?$/.test(rest)) return undefined;
  const comma = /^\s*,/.test(rest) ? '' : ',';
  const body = JSON.stringify(entry, null, 2).replaceAll('\n', `\n${indent}`);
  return `${source.slice(0, end)}${comma}${rest}\n${indent}${JSON.stringify(name)}: ${body}${source.slice(at)}`;
}

/**
 * Set `[mcp_servers.<name>]` in a TOML file's text. A new table is appended, which keeps the rest
 * of the file (comments too) as it was; replacing an existing one rewrites the file through the
 * TOML serializer, which drops comments (the .bak keeps them, and the note says so).
 */
export async function mergeToml(
  path: string,
  text: string | undefined,
  name: string,
  entry: Record<string, unknown>,
): Promise<Merged> {
  const { parse: parseToml, stringify: stringifyToml } = await import('smol-toml');
  let doc: Record<string, unknown>;
  try {
    doc = text ? (parseToml(text) as Record<string, unknown>) : {};
  } catch (error) {
    throw new ConfigError(
      `${path} is not valid TOML (${(error as Error).message.split('\n')[0]}); fix it, then run setup again`,
    );
  }
  const servers = doc.mcp_servers;
  if (servers !== undefined && !isObject(servers)) {
    throw new ConfigError(`${path}: mcp_servers is not a table; fix it, then run setup again`);
  }
  if (servers && canonical(servers[name]) === canonical(entry)) return { text: text ?? '', changed: false };
  const table = stringifyToml({ mcp_servers: { [name]: entry } });
  if (!servers?.[name]) {
    const before = text ? `${text}${text.endsWith('\n') ? '' : '\n'}\n` : '';
    const appended = `${before}${table}\n`;
    try {
      parseToml(appended); // e.g. mcp_servers written as an inline table cannot take a new [table]
      return { text: appended, changed: true };
    } catch {
      // fall through to a rewrite
    }
  }
  const rewritten = stringifyToml({ ...doc, mcp_servers: { ...(servers ?? {}), [name]: entry } });
  return {
    text: `${rewritten}\n`,
    changed: true,
    ...(text?.includes('#') && { note: 'the file was rewritten: its comments are only in the .bak' }),
  };
}
