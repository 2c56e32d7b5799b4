import { join } from 'node:path';
import { z } from 'zod';
import { expandHome } from '../../util/index.js';
import { type Context, from, type Setting } from './define.js';

// The kinds of value settings take. Values arrive as strings (env) or JSON values (config file);
// numbers and booleans are coerced, each kind one way for every setting of it.

export const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** A boolean setting: true/false or 1/0 as text (env), or a JSON boolean (config file). */
export const flag = () =>
  z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
    .transform((value) => value === true || value === 'true' || value === '1');

/** Comma-separated text as its trimmed, non-empty items. */
export const splitCommas = (text: string): string[] =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

/**
 * A list setting: a JSON array (config file, or env text starting with `[`), or, where `comma` is
 * set, comma-separated text. Absent stays undefined, so "no list" and "empty list" differ.
 */
export const list = (comma: boolean) =>
  z.union([z.array(z.string()), z.string()]).transform((value, ctx) => {
    if (Array.isArray(value)) return value;
    const text = value.trim();
    if (!text.startsWith('[')) {
      if (comma) return splitCommas(text);
      ctx.addIssue({ code: 'custom', message: 'expected a JSON array of strings, e.g. ["pytest.*"]' });
      return z.NEVER;
    }
    try {
      const parsed = z.array(z.string()).safeParse(JSON.parse(text));
      if (parsed.success) return parsed.data;
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'expected a JSON array of strings' });
    return z.NEVER;
  });

/** A path setting's value with `~` expanded (undefined stays undefined). */
export const path = <Name extends string, S extends z.ZodType<string | undefined>>(item: Setting<Name, S>) =>
  from([item], ([value], context) => (value === undefined ? undefined : expandHome(value, context.home)));

/** A directory setting: its value, else `name` beneath CODEXEC_HOME (`root`) or where runs live. */
export const dir = <Name extends string, S extends z.ZodType<string | undefined>>(
  item: Setting<Name, S>,
  name: string,
  under: keyof Pick<Context, 'root' | 'runs'> = 'root',
) => from([item], ([value], context) => expandHome(value ?? join(context[under], name), context.home));
