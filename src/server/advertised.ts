// What tools/list shows of a tool's zod schemas. A model reads the whole list at the start of every
// conversation, so it carries what helps a call and nothing else: an argument's description, type,
// enum, default and real bounds stay; the JSON Schema dialect line, zod's ±2^53 bounds on every
// integer and length or pattern limits (a call past them is refused with the reason) go. An output
// schema names the result's fields, which is what a model or a program needs to find them; their
// types and meanings are in docs/tools.md, and every result is checked against the whole schema
// before it is sent.
import type { StandardSchemaWithJSON, ToolAnnotations } from '@modelcontextprotocol/server';
import type { z } from 'zod';

type Json = Record<string, unknown>;
type Options = Parameters<z.ZodObject['~standard']['jsonSchema']['input']>[0];

/**
 * The annotations as advertised: a read-only tool's destructive and idempotent hints go (MCP says
 * they mean something only when readOnlyHint is false), and none at all when nothing is said.
 */
export function advertisedAnnotations(annotations: ToolAnnotations): ToolAnnotations | undefined {
  const { destructiveHint, idempotentHint, ...said } = annotations;
  const shown = said.readOnlyHint === true ? said : annotations;
  return Object.keys(shown).length > 0 ? shown : undefined;
}

/** What tools/list shows of a tool: JSON made from its zod schemas, kept, the zod let go. */
export interface Listed {
  readonly input: Json;
  readonly output: Json;
}

/**
 * A tool's advertised JSON, made on first use from schemas `make` builds for the purpose (kept as
 * JSON: ~1.2 KB of heap for each part of a zod schema; JSON is a fraction). `options` is the SDK's
 * conversion target, the same on every call; another one makes the JSON again.
 */
export function listedJson(
  make: () => { readonly shown: z.ZodObject; readonly output: z.ZodObject },
): (options: Options) => Listed {
  let made: { readonly key: string; readonly listed: Listed } | undefined;
  return (options) => {
    const key = JSON.stringify(options);
    if (made?.key !== key) {
      const { shown, output } = make();
      // Frozen: every tools/list sends these same objects, so none may change them on the way.
      const listed = deepFreeze({
        input: tidy(shown['~standard'].jsonSchema.input(options)) as Json,
        output: outline(output['~standard'].jsonSchema.output(options) as Json),
      });
      made = { key, listed };
    }
    return made.listed;
  };
}

/** A schema for the SDK: `part` of `listed` as its JSON; values pass `check`, or all when absent. */
export function advertised(
  listed: (options: Options) => Listed,
  part: keyof Listed,
  check?: (value: unknown) => unknown,
): StandardSchemaWithJSON<unknown, unknown> {
  const json = (options: Options) => listed(options)[part];
  return {
    '~standard': {
      version: 1,
      vendor: 'codexec',
      validate: (value: unknown) => (check ? check(value) : { value }),
      jsonSchema: { input: json, output: json },
    },
  } as StandardSchemaWithJSON<unknown, unknown>;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

const SAFE = Number.MAX_SAFE_INTEGER;

/** What a schema says that a model does not need to make a call. */
const UNSAID = new Set(['$schema', 'minLength', 'maxLength', 'maxItems', 'pattern']);

/**
 * The schema without the dialect line, length limits and bounds that only restate "an integer".
 * The names in a `properties` map are fields, never keywords: each field is tidied, none dropped.
 */
export function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (UNSAID.has(key)) continue;
    if (key === 'minimum' && value === -SAFE) continue;
    if (key === 'maximum' && value === SAFE) continue;
    out[key] = key === 'properties' ? fieldsOf(value as Json) : tidy(value);
  }
  return out;
}

function fieldsOf(properties: Json): Json {
  return Object.fromEntries(Object.entries(properties).map(([name, field]) => [name, tidy(field)]));
}

/** An object schema naming each top-level field of `schema`. */
export function outline(schema: Json): Json {
  const names = Object.keys((schema.properties ?? {}) as Json);
  return { type: 'object', properties: Object.fromEntries(names.map((name) => [name, {}])) };
}
