import { z } from 'zod';

export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** One task as recorded: what tasks/get reads, whichever server process wrote it. */
export interface TaskRecord {
  readonly taskId: string;
  readonly principal: string;
  readonly tool: string;
  readonly status: TaskStatus;
  readonly statusMessage: string | null;
  /** Output so far (stderr lines tagged), its tail when long. */
  readonly output: string;
  /** completed: the tool's CallToolResult; failed: the JSON-RPC error. */
  readonly result: Record<string, unknown> | null;
  readonly error: { code: number; message: string; data?: unknown } | null;
  /** input_required: the outstanding requests to the client, by key (MRTR's envelope). */
  readonly inputRequests: Record<string, unknown>;
  readonly createdMs: number;
  readonly updatedMs: number;
  readonly ttlMs: number;
}

/** How a task ends (`finish`). */
export type TaskEnd =
  | { status: 'completed'; result: Record<string, unknown>; output: string }
  | { status: 'failed'; error: { code: number; message: string }; output: string }
  | { status: 'cancelled'; output?: string };

export const RESTARTED = 'server restarted';

/**
 * Where task records live: tasks.db (SqliteTaskStore, one machine) or the shared database
 * (PgTaskStore, replicas). Every record names the process running it; a task whose process is
 * gone reads failed RESTARTED. Another principal's task reads as absent.
 */
export interface TaskStore {
  /**
   * Whether other processes may cancel this process's tasks in the store (replicas): then the
   * owner looks (`ended`) while its tasks run, and stops the ones ended elsewhere.
   */
  readonly shared: boolean;
  /** Record a new working task (durably: a tasks/get for it resolves from now on). */
  create(principal: string, tool: string, ttlMs: number): Promise<TaskRecord>;
  /** The task, when it exists for this principal and has not expired; another's reads as absent. */
  get(taskId: string, principal: string): Promise<TaskRecord | undefined>;
  /** This principal's tasks, newest first. */
  list(principal: string, limit?: number): Promise<TaskRecord[]>;
  /** Replace the output so far (only while unfinished). */
  setOutput(taskId: string, output: string, statusMessage: string | null): Promise<void>;
  /**
   * Move an unfinished task to a terminal status; false when it had already ended (a cancelled
   * task stays cancelled when its run reports afterwards).
   */
  finish(taskId: string, end: TaskEnd): Promise<boolean>;
  /**
   * Outstanding request `key` (kept once, whoever asks it again): the task reads input_required
   * until every one is answered or withdrawn. False when the task has ended.
   */
  requestInput(taskId: string, key: string, request: unknown): Promise<boolean>;
  /** Withdraw request `key` (timed out, or its asker gave up) and any answer to it not yet taken. */
  withdrawInput(taskId: string, key: string): Promise<void>;
  /**
   * tasks/update: keep the answers to outstanding requests for the run to take (takeResponses);
   * answers to any other key are ignored. False when there is no such task for this principal.
   */
  answer(taskId: string, principal: string, answers: InputMap): Promise<boolean>;
  /** The answers kept for the run, removed as they are handed over. */
  takeResponses(taskId: string): Promise<InputMap>;
  /** Which of `taskIds` have ended (cancelled or failed by another process), for their owner. */
  ended(taskIds: readonly string[]): Promise<string[]>;
  close(): Promise<void>;
}

export const inputMap = z.record(z.string(), z.unknown());
export type InputMap = z.output<typeof inputMap>;

export function parseMap(text: string | null): InputMap {
  return text === null ? {} : inputMap.parse(JSON.parse(text));
}

/** A task's requests and answers after `change` (both stores apply the same rule). */
export function changedInput(
  row: { input_requests: string | null; input_responses: string | null },
  change: (requests: InputMap, responses: InputMap) => void,
): { status: TaskStatus; requests: string | null; responses: string | null } {
  const requests = parseMap(row.input_requests);
  const responses = parseMap(row.input_responses);
  change(requests, responses);
  const waiting = Object.keys(requests).length > 0;
  return {
    status: waiting ? 'input_required' : 'working',
    requests: waiting ? JSON.stringify(requests) : null,
    responses: Object.keys(responses).length > 0 ? JSON.stringify(responses) : null,
  };
}

/** answer's change: answers to outstanding keys move to the responses; others are ignored. */
export function answering(answers: InputMap) {
  return (requests: InputMap, responses: InputMap) => {
    for (const [key, value] of Object.entries(answers)) {
      if (!Object.hasOwn(requests, key)) continue;
      delete requests[key];
      responses[key] = value;
    }
  };
}

/** The columns both stores keep, read into a record. */
export const rowSchema = z.object({
  task_id: z.string(),
  principal: z.string(),
  tool: z.string(),
  status: z.enum(TASK_STATUSES),
  status_message: z.string().nullable(),
  output: z.string(),
  result: z.string().nullable(),
  error: z.string().nullable(),
  created_ms: z.coerce.number(),
  updated_ms: z.coerce.number(),
  ttl_ms: z.coerce.number(),
  input_requests: z.string().nullable(),
});

export function toRecord(row: z.output<typeof rowSchema>): TaskRecord {
  return {
    taskId: row.task_id,
    principal: row.principal,
    tool: row.tool,
    status: row.status,
    statusMessage: row.status_message,
    output: row.output,
    result: row.result === null ? null : (JSON.parse(row.result) as Record<string, unknown>),
    error: row.error === null ? null : (JSON.parse(row.error) as TaskRecord['error']),
    inputRequests: parseMap(row.input_requests),
    createdMs: row.created_ms,
    updatedMs: row.updated_ms,
    ttlMs: row.ttl_ms,
  };
}

/** finish's columns: the status message, result and error of `end`. */
export function endColumns(end: TaskEnd) {
  return {
    message: end.status === 'failed' ? end.error.message : end.status === 'cancelled' ? 'cancelled' : null,
    result: end.status === 'completed' ? JSON.stringify(end.result) : null,
    error: end.status === 'failed' ? JSON.stringify(end.error) : null,
    output: end.output ?? null,
  };
}

export const RESTARTED_ERROR = JSON.stringify({ code: -32603, message: RESTARTED });
