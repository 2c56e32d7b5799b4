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
  const { applyEdits, modify, parse, printParseErrorCode } = await import('jsonc-parser');
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
  const edits = modify(source, [key, name], entry, { formattingOptions: { insertSpaces: true, tabSize: 2 } });
  const merged = applyEdits(source, edits);
  return { text: merged.endsWith('\n') ? merged : `${merged}\n`, changed: true };
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
