import {
  type McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TaskRecord, Tasks } from '../tasks/index.js';
import { principalOf } from './connection.js';
import { detailedTask, legacyTask, outputMeta, TASKS_EXTENSION } from './tasks.js';

/** How often tasks/result looks whether its task has ended. */
const RESULT_POLL_MS = 100;

const taskIdParams = z.object({ taskId: z.string().min(1) });

/**
 * The task methods, a principal reaching its own tasks only. Both eras: tasks/get, tasks/cancel.
 * 2026-07-28 (the extension): tasks/update. 2025-11-25: tasks/result, tasks/list (the SDK answers
 * these two "method not found" on the 2026 era, which dropped them).
 */
export function registerTaskMethods(
  server: McpServer,
  tasks: Tasks,
  /** CODEXEC_APPROVAL_TIMEOUT_MS: how long a form sent on tasks/result waits for its answer. */
  answerTimeoutMs: number,
): void {
  server.server.setRequestHandler('tasks/get', { params: taskIdParams }, async (params, ctx) => {
    const isModern = modern(ctx); // before the lookup: a non-declaring client learns nothing
    const principal = principalOf(ctx);
    const record = found(await tasks.get(params.taskId, principal));
    const fresh = newOutput(tasks, principal, record);
    return isModern ? detailedTask(record, fresh) : { ...legacyTask(record), ...outputMeta(record, fresh) };
  });
  server.server.setRequestHandler('tasks/cancel', { params: taskIdParams }, async (params, ctx) => {
    const principal = principalOf(ctx);
    if (modern(ctx)) {
      if (!(await tasks.cancel(params.taskId, principal))) found(undefined);
      return {};
    }
    const before = found(await tasks.get(params.taskId, principal));
    if (before.status !== 'working' && before.status !== 'input_required')
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Cannot cancel task: already ${before.status}`,
      );
    await tasks.cancel(params.taskId, principal);
    return legacyTask(found(await tasks.get(params.taskId, principal)));
  });
  // Answers to keys not outstanding are ignored, as the extension says; the ack is empty. The SDK
  // lifts `inputResponses` (reserved on 2026-era requests) into the context, bare results only.
  server.server.setRequestHandler('tasks/update', { params: taskIdParams }, async (params, ctx) => {
    modern(ctx);
    const answers = ctx.mcpReq.inputResponses ?? {};
    if (!(await tasks.update(params.taskId, principalOf(ctx), answers))) found(undefined);
    return {};
  });
  server.server.setRequestHandler('tasks/result', { params: taskIdParams }, async (params, ctx) => {
    const principal = principalOf(ctx);
    const record = await ended(
      tasks,
      params.taskId,
      principal,
      ctx.mcpReq.signal,
      answerer(ctx, tasks, principal, answerTimeoutMs),
    );
    const related = { [RELATED_TASK_META_KEY]: { taskId: record.taskId } };
    if (record.status === 'completed') {
      const result = record.result ?? {};
      return { ...result, _meta: { ...(result._meta as object | undefined), ...related } };
    }
    if (record.status === 'failed' && record.error)
      throw new ProtocolError(record.error.code, record.error.message, { output: record.output });
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `task ${record.taskId} was cancelled`);
  });
  server.server.setRequestHandler(
    'tasks/list',
    { params: z.object({ cursor: z.string().optional() }) },
    async (_params, ctx) => ({ tasks: (await tasks.list(principalOf(ctx))).map(legacyTask) }),
  );
}

/**
 * Whether this is a 2026-era request, which must declare the extension (a 2025-era client needs
 * only the server's tasks capability).
 */
function modern(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  if (envelope === undefined) return false;
  const capabilities = envelope['io.modelcontextprotocol/clientCapabilities'] as
    | { extensions?: Record<string, unknown> }
    | undefined;
  if (typeof capabilities?.extensions?.[TASKS_EXTENSION] === 'object') return true;
  throw new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  } as never);
}

function found(record: TaskRecord | undefined): TaskRecord {
  if (record) return record;
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
}

/**
 * The task once it has ended (tasks/result waits for it, until the request is cancelled);
 * `waiting` is shown the task each time it reads input_required meanwhile.
 */
async function ended(
  tasks: Tasks,
  taskId: string,
  principal: string,
  signal: AbortSignal,
  waiting: (record: TaskRecord) => void,
): Promise<TaskRecord> {
  for (;;) {
    const record = found(await tasks.get(taskId, principal));
    if (record.status === 'input_required') waiting(record);
    if (record.status !== 'working' && record.status !== 'input_required') return record;
    if (signal.aborted)
      throw new ProtocolError(ProtocolErrorCode.InternalError, 'tasks/result was cancelled');
    await new Promise((resolve) => setTimeout(resolve, RESULT_POLL_MS));
  }
}

/**
 * 2025-11-25: a task waiting for input (an approval asked inside it) has each of its requests sent
 * to the client on tasks/result's stream, once, tagged with the task, and the answer handed to the
 * task as tasks/update hands a 2026-era one; an error for an answer declines. An unanswered request
 * is the task's own to time out.
 * A 2026-era tasks/result (not in that era's methods) answers nothing this way.
 */
function answerer(
  ctx: ServerContext,
  tasks: Tasks,
  principal: string,
  timeoutMs: number,
): (record: TaskRecord) => void {
  if (ctx.mcpReq.envelope !== undefined) return () => {};
  const sent = new Set<string>();
  return (record) => {
    for (const [key, request] of Object.entries(record.inputRequests)) {
      const { method, params } = request as { method?: string; params?: Record<string, unknown> };
      if (sent.has(key) || method !== 'elicitation/create' || !params) continue;
      sent.add(key);
      const related = {
        ...(params._meta as object | undefined),
        [RELATED_TASK_META_KEY]: { taskId: record.taskId },
      };
      const answer = (value: unknown) => tasks.update(record.taskId, principal, { [key]: value });
      ctx.mcpReq
        .elicitInput({ ...params, _meta: related } as never, {
          relatedRequestId: ctx.mcpReq.id, // on tasks/result's own stream (HTTP)
          signal: ctx.mcpReq.signal,
          timeout: timeoutMs,
        })
        .then(answer, (error: Error) =>
          // An error for an answer (or one the form refuses) is a no, as in the 2026 era; a
          // tasks/result that was cancelled leaves the question for the next one to ask, and no
          // answer in time is the task's own timeout's to refuse (it started first).
          ctx.mcpReq.signal.aborted || /timed? ?out/i.test(error.message)
            ? undefined
            : answer({ action: 'decline' }),
        )
        .catch(() => {}); // the task gone meanwhile
    }
  };
}

/**
 * What each principal's tasks/get was sent of a working task's output (its length and last
 * characters), so the next poll sends only what came after. An ended task's poll sends all it kept
 * (its last account) and is forgotten. The task keeps its last 64 KiB: once that window has moved
 * past what was sent, a poll sends it all. At most SENT_KEPT tasks are remembered (the oldest go
 * first: a client that stopped polling leaves nothing behind for long).
 */
const sentOutput = new WeakMap<Tasks, Map<string, { readonly length: number; readonly tail: string }>>();
const SENT_KEPT = 1024;
const TAIL_CHARS = 64;

function newOutput(tasks: Tasks, principal: string, record: TaskRecord): string {
  const sent = sentOutput.get(tasks) ?? new Map<string, { readonly length: number; readonly tail: string }>();
  sentOutput.set(tasks, sent);
  const key = `${principal}\0${record.taskId}`;
  const before = sent.get(key);
  sent.delete(key);
  const { output } = record;
  if (record.status !== 'working' && record.status !== 'input_required') return output;
  sent.set(key, { length: output.length, tail: output.slice(-TAIL_CHARS) });
  if (sent.size > SENT_KEPT) sent.delete(sent.keys().next().value as string);
  const continues = before && output.slice(0, before.length).endsWith(before.tail);
  return continues ? output.slice(before.length) : output;
}
