import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { lazily } from '../../util/index.js';
import { TASKS_EXTENSION } from '../tasks.js';

/** How many task ids one listen may name: a longer list is refused before any is looked up. */
export const MAX_TASK_IDS = 100;
/**
 * How many listens may be open at once: per stdio connection (listens for tasks), per HTTP
 * principal (every listen, whatever it follows: one that follows no task never ends by itself).
 */
export const MAX_TASK_LISTENS = 16;
/** Task ids are UUIDs; a longer string names no task and is not looked up. */
const MAX_ID_CHARS = 128;

export type ListenId = string | number;

/** The JSON-RPC error of a listen refused before it opened. */
export interface ListenError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** A listen for tasks: the ids it names (each once), or why it is refused. */
export type TaskListenRequest =
  | { readonly kind: 'listen'; readonly id: ListenId; readonly taskIds: readonly string[] }
  | { readonly kind: 'refused'; readonly id: ListenId; readonly error: ListenError };

/**
 * What this module reads of a listen; the SDK validates the rest (the envelope, the core filter).
 * Made on the first listen, as anyListen: a server no client listens to holds neither.
 */
const listenMessage = lazily(() =>
  z.object({
    id: z.union([z.string(), z.number()]),
    method: z.literal('subscriptions/listen'),
    params: z.looseObject({
      _meta: z.looseObject({ [PROTOCOL_VERSION_META_KEY]: z.string() }),
      notifications: z.looseObject({ taskIds: z.unknown() }),
    }),
  }),
);

/** The id of a subscriptions/listen request, whatever its filter; undefined for any other message. */
export function listenId(message: unknown): ListenId | undefined {
  if (!namesListen(message)) return undefined;
  const parsed = anyListen().safeParse(message);
  return parsed.success ? parsed.data.id : undefined;
}

const anyListen = lazily(() =>
  z.object({
    id: z.union([z.string(), z.number()]),
    method: z.literal('subscriptions/listen'),
  }),
);

/**
 * A 2026-era subscriptions/listen whose filter names `taskIds`, read; undefined for any other
 * message (the SDK's alone, as is a listen without the envelope, which it refuses).
 */
export function readTaskListen(message: unknown): TaskListenRequest | undefined {
  if (!namesListen(message)) return undefined;
  const parsed = listenMessage().safeParse(message);
  if (!parsed.success || parsed.data.params.notifications.taskIds === undefined) return undefined;
  const { id, params } = parsed.data;
  const refused = (error: ListenError): TaskListenRequest => ({ kind: 'refused', id, error });
  if (!declaresTasks(params._meta[CLIENT_CAPABILITIES_META_KEY])) {
    const error = new MissingRequiredClientCapabilityError({
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    } as never);
    return refused({ code: error.code, message: error.message, data: error.data });
  }
  const { taskIds } = params.notifications;
  const notStrings = invalid('notifications.taskIds must be an array of task ids (strings)');
  if (!Array.isArray(taskIds)) return refused(notStrings);
  if (taskIds.length > MAX_TASK_IDS)
    return refused(invalid(`at most ${MAX_TASK_IDS} taskIds per listen (this one names ${taskIds.length})`));
  if (!taskIds.every((taskId) => typeof taskId === 'string')) return refused(notStrings);
  const named = [...new Set(taskIds as string[])].filter((taskId) => taskId.length <= MAX_ID_CHARS);
  return { kind: 'listen', id, taskIds: named };
}

/**
 * The refusal of a listen past MAX_TASK_LISTENS (the SDK's own limit has this code and words);
 * `what` names the listens counted.
 */
export function tooManyListens(what: string, where: string): ListenError {
  return {
    code: ProtocolErrorCode.InternalError,
    message: `Subscription limit reached: at most ${MAX_TASK_LISTENS} ${what} open ${where}; cancel one first`,
  };
}

function invalid(why: string): ListenError {
  return { code: ProtocolErrorCode.InvalidParams, message: `Invalid params: ${why}` };
}

/** Whether a message's method is subscriptions/listen: every other message skips the parse (µs each). */
function namesListen(message: unknown): boolean {
  return (message as { method?: unknown } | null)?.method === 'subscriptions/listen';
}

function declaresTasks(capabilities: unknown): boolean {
  const extensions = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  return typeof extensions?.[TASKS_EXTENSION] === 'object' && extensions[TASKS_EXTENSION] !== null;
}
