import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { TaskRecord, TaskRun, Tasks } from '../tasks/index.js';
import { currentPrincipal, isoTime } from '../util/index.js';
import { isStdio } from './connection.js';

/**
 * MCP Tasks in both eras. 2026-07-28: the Tasks extension (SEP-2663): a client that declares it
 * on a request may get a task handle (`resultType: "task"`) and polls `tasks/get`. 2025-11-25:
 * the experimental core tasks: a request with `params.task` gets `{ task }` and uses tasks/get,
 * tasks/result, tasks/list, tasks/cancel. A 2026-era task that needs approval starts at once and
 * asks inside (input_required, answered by tasks/update); a 2025-era call is asked on the call
 * itself, its task starting when its run would have (task-methods.ts answers the polls).
 */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Where a task's output so far is carried (the Task shapes have no field for it). */
export const OUTPUT_META_KEY = 'io.github.codexec/output';
export const POLL_INTERVAL_MS = 500;

export type TaskEra = 'modern' | 'legacy';

/** A 2025-era request's `params.task`, which the SDK does not hand a tool: read in readTaskParams. */
const legacyParams = new AsyncLocalStorage<{ readonly ttl?: number }>();

/** Which era's task this request may become, or undefined when it asked for none. */
export function taskEra(ctx: ServerContext): TaskEra | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  if (envelope === undefined) return legacyParams.getStore() ? 'legacy' : undefined;
  const capabilities = envelope[CLIENT_CAPABILITIES_META_KEY] as { extensions?: unknown } | undefined;
  const extensions = capabilities?.extensions as Record<string, unknown> | undefined;
  return typeof extensions?.[TASKS_EXTENSION] === 'object' ? 'modern' : undefined;
}

type Handler = (request: { params?: Record<string, unknown> }, ctx: ServerContext) => Promise<unknown>;

/**
 * The SDK hands a tool callback its arguments only, and has no runtime for 2025-11-25 tasks; the
 * request's `task` is read around the tools/call handler, through the Server's wrapping hook (for
 * its subclasses; McpServer makes its own Server). Call before McpServer sets its tools/call
 * handler: before any tool is registered, on a server made without the `tools` capability.
 */
export function readTaskParams(server: McpServer): void {
  const inner = server.server as unknown as { _wrapHandler(method: string, handler: Handler): Handler };
  const wrap = inner._wrapHandler.bind(inner);
  inner._wrapHandler = (method, handler) =>
    wrap(method, (request, ctx) => {
      const task = method === 'tools/call' ? request.params?.task : undefined;
      if (typeof task !== 'object' || task === null) return handler(request, ctx);
      return legacyParams.run(task as { ttl?: number }, () => handler(request, ctx));
    });
}

/** A tool call that may be handed back as a task: set around the handler by defineTool. */
export interface TaskScope {
  readonly tasks: Tasks;
  readonly tool: string;
  readonly era: TaskEra;
  /** The tool's result as the client would have had it, from the handler's value or its throw. */
  readonly settle: (outcome: { value: unknown } | { error: unknown }) => CallToolResult;
  /** Tells the client each later status of the task (2025-11-25 over stdio: taskStatusPusher). */
  readonly notify?: ((task: ReturnType<typeof legacyTask>) => void) | undefined;
}

/** The answer to a call handed back as a task (a CreateTaskResult), in the shape tools/call checks. */
export type TaskHandle = CallToolResult & { readonly taskId?: string; readonly task?: object };

const scopes = new AsyncLocalStorage<TaskScope>();
const runs = new AsyncLocalStorage<TaskRun>();

export function inTaskScope<T>(scope: TaskScope, work: () => T): T {
  return scopes.run(scope, work);
}

/**
 * Where the gate has approved a run: in a call that may become a task, start `execute` as one and
 * return its handle; else undefined (run it now). Code under `execute` sees the task's signal and
 * output sink through currentTaskRun().
 */
export function startAsTask(execute: () => Promise<unknown>): Promise<TaskHandle> | undefined {
  const scope = scopes.getStore();
  if (!scope) return undefined;
  return handOver(scope, execute);
}

async function handOver(scope: TaskScope, execute: () => Promise<unknown>): Promise<TaskHandle> {
  // Handed over once: what the task runs must not become a task again.
  const record = await scopes.exit(() =>
    scope.tasks.start(
      currentPrincipal(),
      scope.tool,
      (run) =>
        runs.run(run, () =>
          execute().then(
            (value) => scope.settle({ value }),
            (error: unknown) => scope.settle({ error }),
          ),
        ),
      scope.notify && ((changed) => scope.notify?.(legacyTask(changed))),
    ),
  );
  // Re-read: work that asks at once (approval) has made it input_required already.
  const current = (await scope.tasks.get(record.taskId, record.principal)) ?? record;
  const task = scope.era === 'modern' ? modernTask(current) : legacyTask(current);
  handles.add(task);
  const handle = scope.era === 'modern' ? { resultType: 'task', ...task } : { task };
  // content and structuredContent: the SDK's tools/call checks want them on every result.
  return { ...handle, content: [{ type: 'text', text: JSON.stringify(handle) }], structuredContent: task };
}

/** notifications/tasks/status (2025-11-25) to `server`'s client, where it can be reached (isStdio). */
export function taskStatusPusher(server: McpServer): TaskScope['notify'] {
  if (!isStdio(server)) return undefined;
  return (task) => {
    server.server.notification({ method: 'notifications/tasks/status', params: task }).catch(() => {});
  };
}

/** Which era's task this call would become, when it may become one (defineTool's scope). */
export function taskScopeEra(): TaskEra | undefined {
  return scopes.getStore()?.era;
}

/** The task a run belongs to, when it runs as one (withProgress reads it). */
export function currentTaskRun(): TaskRun | undefined {
  return runs.getStore();
}

/** The structured content of task handles, which a tool's output schema lets through. */
const handles = new WeakSet<object>();
export function isTaskHandle(value: unknown): boolean {
  return typeof value === 'object' && value !== null && handles.has(value);
}

/** The extension's Task (2026-07-28). */
export function modernTask(record: TaskRecord) {
  return {
    taskId: record.taskId,
    status: record.status,
    createdAt: isoTime(record.createdMs),
    lastUpdatedAt: isoTime(record.updatedMs),
    ttlMs: record.ttlMs,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
}

/**
 * The 2025-11-25 Task: `ttl` and `pollInterval`; a tool result with `isError` reads `failed` there
 * (the extension reads it `completed`: failed is for protocol errors only).
 */
export function legacyTask(record: TaskRecord) {
  const toolError = record.status === 'completed' && record.result?.isError === true;
  return {
    taskId: record.taskId,
    status: toolError ? ('failed' as const) : record.status,
    ...(statusMessage(record) !== undefined && { statusMessage: statusMessage(record) }),
    createdAt: isoTime(record.createdMs),
    lastUpdatedAt: isoTime(record.updatedMs),
    ttl: record.ttlMs,
    pollInterval: POLL_INTERVAL_MS,
  };
}

/**
 * A working task's statusMessage: the last line of its output, for a model reading the task (the
 * output itself travels once, under _meta).
 */
const STATUS_CHARS = 200;
export function statusMessage(record: TaskRecord): string | undefined {
  if (record.status === 'input_required' && record.output === '')
    return `${record.tool} waits for the answer to ${Object.keys(record.inputRequests).join(', ')}`;
  if (record.status === 'working' || record.status === 'input_required') {
    const line = record.output.trimEnd().split('\n').at(-1) ?? '';
    return line === '' ? `${record.tool} is running` : line.slice(-STATUS_CHARS);
  }
  return record.statusMessage ?? undefined;
}

/** The output this poll sends (`fresh`), under `_meta`, until the task completes. */
export function outputMeta(record: TaskRecord, fresh: string): { _meta?: Record<string, string> } {
  return fresh === '' || record.status === 'completed' ? {} : { _meta: { [OUTPUT_META_KEY]: fresh } };
}

/**
 * The extension's DetailedTask (tasks/get, notifications/tasks), with the output this read sends
 * (`fresh`) under `_meta` until it completes.
 */
export function detailedTask(record: TaskRecord, fresh: string): Record<string, unknown> {
  const base = { ...modernTask(record), ...outputMeta(record, fresh) };
  const message = statusMessage(record);
  switch (record.status) {
    case 'completed':
      return { ...base, result: record.result ?? {} };
    case 'failed':
      return { ...base, statusMessage: message, error: { ...record.error, data: { output: record.output } } };
    case 'cancelled':
      return { ...base, statusMessage: 'cancelled' };
    default:
      return {
        ...base,
        statusMessage: message,
        ...(record.status === 'input_required' && { inputRequests: record.inputRequests }),
      };
  }
}
