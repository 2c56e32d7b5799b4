import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TaskRecord, TaskRun, Tasks } from '../tasks/index.js';
import { currentPrincipal } from '../util/index.js';
import { principalOf } from './define-tool.js';

/**
 * The MCP Tasks extension (SEP-2663, protocol 2026-07-28): a client that declares it on a request
 * may get a task handle (`resultType: "task"`) instead of the result, and polls `tasks/get`.
 * Codexec answers so whenever a task-capable tool is called with the extension declared; the
 * approval (if any) is settled first, on the call itself (multi round-trip), as the extension
 * asks, so the task starts when the run would have.
 */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Where a task's output so far is carried on tasks/get (the Task shape has no field for it). */
export const OUTPUT_META_KEY = 'io.github.codexec/output';
const POLL_INTERVAL_MS = 500;
/** A working task's statusMessage: the last of its output, for a model reading the task. */
const STATUS_CHARS = 2000;

/** Whether this request's client declared the Tasks extension (2026 era: per request). */
export function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: unknown } | undefined;
  const extensions = capabilities?.extensions as Record<string, unknown> | undefined;
  return typeof extensions?.[TASKS_EXTENSION] === 'object';
}

/** A tool call that may be handed back as a task: set around the handler by defineTool. */
export interface TaskScope {
  readonly tasks: Tasks;
  readonly tool: string;
  /** The tool's result as the client would have had it, from the handler's value or its throw. */
  readonly settle: (outcome: { value: unknown } | { error: unknown }) => CallToolResult;
}

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
export function startAsTask(execute: () => Promise<unknown>): TaskHandle | undefined {
  const scope = scopes.getStore();
  if (!scope) return undefined;
  // Handed over once: what the task runs must not become a task again.
  const record = scopes.exit(() =>
    scope.tasks.start(currentPrincipal(), scope.tool, (run) =>
      runs.run(run, () =>
        execute().then(
          (value) => scope.settle({ value }),
          (error: unknown) => scope.settle({ error }),
        ),
      ),
    ),
  );
  const task = taskShape(record);
  const handle = { resultType: 'task' as const, ...task };
  handles.add(task);
  // content and structuredContent: the SDK's tools/call checks want them on every result.
  return { ...handle, content: [{ type: 'text', text: JSON.stringify(handle) }], structuredContent: task };
}

/** The answer to a call handed back as a task (CreateTaskResult), in the shape tools/call checks. */
export interface TaskHandle extends CallToolResult {
  readonly resultType: 'task';
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

const taskIdParams = z.object({ taskId: z.string().min(1) });

/** tasks/get, tasks/update and tasks/cancel: a principal reaches its own tasks only. */
export function registerTaskMethods(server: McpServer, tasks: Tasks): void {
  server.server.setRequestHandler('tasks/get', { params: taskIdParams }, async (params, ctx) => {
    requireDeclared(ctx);
    return detailed(found(tasks.get(params.taskId, principalOf(ctx))));
  });
  server.server.setRequestHandler('tasks/cancel', { params: taskIdParams }, async (params, ctx) => {
    requireDeclared(ctx);
    if (!tasks.cancel(params.taskId, principalOf(ctx))) found(undefined);
    return {};
  });
  // Codexec's tasks never ask for input (approval comes before the task): nothing is outstanding,
  // and answers to keys not outstanding are ignored, as the extension says.
  server.server.setRequestHandler(
    'tasks/update',
    { params: taskIdParams.extend({ inputResponses: z.record(z.string(), z.unknown()) }) },
    async (params, ctx) => {
      requireDeclared(ctx);
      found(tasks.get(params.taskId, principalOf(ctx)));
      return {};
    },
  );
}

function requireDeclared(ctx: ServerContext): void {
  if (declaresTasks(ctx)) return;
  throw new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  } as never);
}

function found(record: TaskRecord | undefined): TaskRecord {
  if (record) return record;
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
}

function taskShape(record: TaskRecord) {
  return {
    taskId: record.taskId,
    status: record.status,
    createdAt: new Date(record.createdMs).toISOString(),
    lastUpdatedAt: new Date(record.updatedMs).toISOString(),
    ttlMs: record.ttlMs,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
}

/** The DetailedTask of the extension, with the output so far under `_meta` until it completes. */
function detailed(record: TaskRecord): Record<string, unknown> {
  const base = taskShape(record);
  const output = record.output === '' ? {} : { _meta: { [OUTPUT_META_KEY]: record.output } };
  switch (record.status) {
    case 'completed':
      return { ...base, result: record.result ?? {} };
    case 'failed':
      return {
        ...base,
        statusMessage: record.statusMessage ?? 'failed',
        error: { ...record.error, data: { output: record.output } },
        ...output,
      };
    case 'cancelled':
      return { ...base, statusMessage: 'cancelled', ...output };
    default:
      return {
        ...base,
        statusMessage:
          record.output === '' ? `${record.tool} is running` : record.output.slice(-STATUS_CHARS),
        ...(record.status === 'input_required' && { inputRequests: {} }),
        ...output,
      };
  }
}
