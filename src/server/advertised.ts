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

/** The input schema as advertised; parsing stays the tool's own (defineTool parses with zod). */
export function advertisedInput(schema: z.ZodObject): StandardSchemaWithJSON<unknown, unknown> {
  return advertised(schema, tidy, () => true);
}

/** The output schema's field names; a result is still checked against the whole zod schema. */
export function advertisedOutput(
  schema: z.ZodObject,
  admit: (value: unknown) => boolean = () => false,
): StandardSchemaWithJSON<unknown, unknown> {
  return advertised(schema, outline, admit);
}

/**
 * The annotations as advertised: a read-only tool's destructive and idempotent hints go (MCP says
 * they mean something only when readOnlyHint is false), and none at all when nothing is said.
 */
export function advertisedAnnotations(annotations: ToolAnnotations): ToolAnnotations | undefined {
  const { destructiveHint, idempotentHint, ...said } = annotations;
  const shown = said.readOnlyHint === true ? said : annotations;
  return Object.keys(shown).length > 0 ? shown : undefined;
}

/** A schema whose JSON is `shown` of zod's, and which lets `admit`ted values pass unchecked. */
function advertised(
  schema: z.ZodObject,
  shown: (json: Json) => unknown,
  admit: (value: unknown) => boolean,
): StandardSchemaWithJSON<unknown, unknown> {
  const std = schema['~standard'];
  return {
    '~standard': {
      version: 1,
      vendor: 'codexec',
      validate: (value: unknown) => (admit(value) ? { value } : std.validate(value)),
      jsonSchema: {
        input: (options: Options) => shown(std.jsonSchema.input(options) as Json),
        output: (options: Options) => shown(std.jsonSchema.output(options) as Json),
      },
    },
  } as StandardSchemaWithJSON<unknown, unknown>;
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
