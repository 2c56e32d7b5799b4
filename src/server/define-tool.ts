import {
  type CallToolResult,
  type ContentBlock,
  type InputRequiredResult,
  isInputRequiredResult,
  type McpServer,
  type ServerContext,
  type ToolAnnotations,
} from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { InvalidInputError } from '../errors/index.js';
import type { Tasks } from '../tasks/index.js';
import { asPrincipal } from '../util/index.js';
import { advertised, advertisedAnnotations, listedJson } from './advertised.js';
import { whileOpen } from './call-stream.js';
import { inCall } from './client-log.js';
import { principalOf } from './connection.js';
import { errorResult, okResult } from './results.js';
import {
  inTaskScope,
  isTaskHandle,
  type TaskHandle,
  type TaskScope,
  taskEra,
  taskStatusPusher,
} from './tasks.js';
import type { TextShape } from './text.js';

export interface ToolSchemas<I extends z.ZodObject, O extends z.ZodObject> {
  readonly input: I;
  /**
   * The input schema clients are shown, when it must be narrower than what is parsed: a language
   * that is not allowed vanishes from the enum, yet a call naming it is still parsed, so the gate
   * refuses it with RUNTIME_NOT_ALLOWED rather than a bare enum error.
   */
  readonly advertisedInput?: z.ZodObject;
  /** What CODEXEC_TOOLS=codemode shows instead of `advertisedInput`: the fields a lone tool needs. */
  readonly compactInput?: z.ZodObject;
  readonly output: O;
}

export interface ToolDefinition<I extends z.ZodObject, O extends z.ZodObject> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** What CODEXEC_TOOLS=codemode shows instead of `description` (its tools/list stays small). */
  readonly compactDescription?: string;
  /**
   * Its zod schemas, new ones on each call: made on the tool's first call and kept (to parse
   * arguments, check results and make tools/list's JSON), or, for a tools/list before any call,
   * made for its JSON alone and let go. A schema made at module scope would sit in every idle
   * server's heap instead (~1.2 KB for each of its parts).
   */
  readonly schemas: () => ToolSchemas<I, O>;
  /** What the tool does to the world; tools/list shows what they mean (advertisedAnnotations). */
  readonly annotations: ToolAnnotations;
  /** How the result reads as text (what is plain text, what is left out): src/server/text.ts. */
  readonly text?: TextShape;
  /** Content blocks to send after the text (images, resource links), made from the value. */
  readonly extraContent?: (value: z.input<O>) => ContentBlock[];
  /**
   * MCP Tasks: where a call that asks for one (2026: declares the extension; 2025: `task`) is
   * handed back as a task, once the gate has approved its run, or, on 2026, at once when it must
   * ask for approval, which the task then asks (Gatekeeper.run). Absent: the tool answers at once.
   */
  readonly tasks?: Tasks;
  /** May return an input-required result (2026 era): the client answers and calls again. */
  readonly handler: (
    args: z.output<I>,
    ctx: ServerContext,
  ) => Promise<z.input<O> | InputRequiredResult | TaskHandle>;
}

/**
 * Register a tool whose advertised schemas are the zod ones, but whose argument errors come back
 * in our contract (`isError` + `{ success: false, error, code: "INVALID_INPUT" }`) rather than
 * the SDK's bare text. The SDK sees a pass-through schema; the handler parses with zod itself.
 */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  server: McpServer,
  tool: ToolDefinition<I, O>,
): void {
  const selection = selected.get(server);
  if (selection && !selection.names.has(tool.name)) return;
  const compact = selection?.compact === true;
  const annotations = advertisedAnnotations(tool.annotations);
  // Made on the first call and kept; tools/list's JSON comes from these once they exist (the first
  // call's result needs it), else from schemas made for it alone.
  let kept: ToolSchemas<I, O> | undefined;
  const parsing = () => {
    kept ??= tool.schemas();
    return kept;
  };
  const listed = listedJson(() => {
    const made = kept ?? tool.schemas();
    return {
      shown: (compact && made.compactInput) || made.advertisedInput || made.input,
      output: made.output,
    };
  });
  const unchecked = tool.tasks ? isTaskHandle : () => false;
  const registered = server.registerTool(
    tool.name,
    {
      title: tool.title,
      description: (compact && tool.compactDescription) || tool.description,
      inputSchema: advertised(listed, 'input'),
      ...(!compact && {
        outputSchema: advertised(listed, 'output', (value) =>
          unchecked(value) ? { value } : parsing().output['~standard'].validate(value),
        ),
      }),
      ...(annotations && { annotations }),
    },
    async (raw: unknown, ctx: ServerContext) => {
      const parsed = parsing().input.safeParse(raw ?? {});
      if (!parsed.success) return errorResult(new InvalidInputError(describeIssues(parsed.error)));
      const settle: TaskScope['settle'] = (outcome) => {
        if ('error' in outcome) return errorResult(outcome.error);
        const { value } = outcome;
        if (isInputRequiredResult(value) || isTaskHandle((value as CallToolResult).structuredContent))
          return value as unknown as CallToolResult;
        return okResult(
          value as Record<string, unknown>,
          tool.extraContent?.(value as z.input<O>) ?? [],
          tool.text,
        );
      };
      const handle = () => tool.handler(parsed.data, ctx);
      const era = tool.tasks && taskEra(ctx);
      const notify = era === 'legacy' ? taskStatusPusher(server) : undefined;
      const scope =
        tool.tasks && era ? { tasks: tool.tasks, tool: tool.name, era, settle, notify } : undefined;
      try {
        const value = await whileOpen(ctx, () =>
          inCall(server, ctx, () =>
            asPrincipal(principalOf(ctx), () => (scope ? inTaskScope(scope, handle) : handle())),
          ),
        );
        return settle({ value });
      } catch (error) {
        return settle({ error });
      }
    },
  );
  // 2025-11-25 tasks: tools/list says which tools take `task` (the 2026 era drops the field).
  if (tool.tasks) registered.execution = { taskSupport: 'optional' };
}

/** The tools a server registers (CODEXEC_TOOLS), when not all: set before any is defined. */
const selected = new WeakMap<McpServer, { readonly names: ReadonlySet<string>; readonly compact: boolean }>();
export function selectTools(server: McpServer, names: readonly string[] | undefined, compact: boolean): void {
  if (names) selected.set(server, { names: new Set(names), compact });
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.join('.') : 'arguments';
      return `${where}: ${issue.message}`;
    })
    .join('; ');
}
