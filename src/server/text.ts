// The text a model reads of a tool's result. `structuredContent` carries every field; the text is
// what a model pays for, so it says only what is not a default: one line of compact JSON with the
// facts (a client without structured content can still parse it), then output, code or an error
// as plain text, not escaped inside JSON. `print(1)` reads:
//   {"execution_id":"exec_0123456789ab","exit_code":0}
//   1

/** How one tool's result reads as text. */
export interface TextShape {
  /** Fields shown as plain text after the facts, in this order; every one but the first is labelled. */
  readonly plain?: readonly string[];
  /** Fields the text leaves out: the call fixed them, or they only measure (structuredContent has them). */
  readonly quiet?: readonly string[];
  /** The value as the text shows it, where a field must read shorter than it is stored. */
  readonly shown?: (value: Record<string, unknown>) => Record<string, unknown>;
}

/**
 * Booleans whose usual value says nothing, by field name wherever they appear. Other booleans are
 * always shown: their absence would read as either value.
 */
const USUAL: Readonly<Record<string, boolean>> = {
  success: true,
  session_alive: true,
  timed_out: false,
  cancelled: false,
  truncated: false,
  partial: false,
  more: false,
  walk_stopped: false,
  pty: false,
};

/** The text content of a result: its facts, then its plain-text fields. */
export function resultText(value: Record<string, unknown>, shape: TextShape = {}): string {
  const shown = shape.shown ? shape.shown(value) : value;
  const plain = shape.plain ?? [];
  const leftOut = new Set([...plain, ...(shape.quiet ?? [])]);
  const facts: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(shown)) if (!leftOut.has(key)) facts[key] = field;
  const header = JSON.stringify(compact(facts) ?? facts);
  const sections = plain.flatMap((key, index) => {
    const text = shown[key];
    if (typeof text !== 'string' || text === '') return [];
    return [index === 0 ? text : `--- ${key} ---\n${text}`];
  });
  return [header, ...sections].map((part) => (part.endsWith('\n') ? part : `${part}\n`)).join('');
}

/** The value without what is empty or usual; undefined when nothing is left. */
function compact(value: unknown, key?: string): unknown {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'boolean') return key !== undefined && USUAL[key] === value ? undefined : value;
  if (Array.isArray(value)) {
    const items = value.map((item) => compact(item) ?? item);
    return items.length === 0 ? undefined : items;
  }
  if (typeof value !== 'object') return value;
  const kept: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    const left = compact(field, name);
    if (left !== undefined) kept[name] = left;
  }
  return Object.keys(kept).length === 0 ? undefined : kept;
}

/**
 * A run's text (execute_code, run_script, send_to_session, execute_command): its output plain;
 * the language, where and how it ran and how long it took left to structuredContent.
 */
export const RUN_TEXT: TextShape = {
  plain: ['stdout', 'stderr'],
  quiet: ['language', 'sandbox_mode', 'warm', 'duration_ms', 'execution_time', 'working_dir', 'work_dir'],
};
