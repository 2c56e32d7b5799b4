import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { TaskRecord, Tasks } from '../../tasks/index.js';
import { log } from '../../util/index.js';
import { detailedTask } from '../tasks.js';
import type { TaskFeed } from './feed.js';
import type { ListenId } from './request.js';

const ENDED = new Set(['completed', 'failed', 'cancelled']);

/** A notification on a listen's stream (the transport adds `jsonrpc`). */
export interface ListenNotification {
  readonly method: string;
  readonly params: Record<string, unknown>;
}

/**
 * Which of `taskIds` `principal` may listen to: its own tasks that exist. Another principal's and
 * unknown ids read alike (absent), so the answer tells nothing of them.
 */
export async function acknowledge(
  tasks: Tasks,
  principal: string,
  taskIds: readonly string[],
): Promise<string[]> {
  const found = await Promise.all(
    taskIds.map((taskId) =>
      tasks.get(taskId, principal).catch((error: Error) => {
        log('warn', `task listens: cannot read task ${taskId}: ${error.message}`);
        return undefined;
      }),
    ),
  );
  return taskIds.filter((_, index) => found[index] !== undefined);
}

/** The end of a listen, its JSON-RPC result: the spec's graceful close. */
export function listenEnd(id: ListenId, meta: Record<string, unknown> = {}) {
  return { id, result: { resultType: 'complete', _meta: { ...meta, [SUBSCRIPTION_ID_META_KEY]: id } } };
}

export interface TaskListenOptions {
  readonly feed: TaskFeed;
  readonly principal: string;
  readonly id: ListenId;
  /** The task ids acknowledged. */
  readonly taskIds: readonly string[];
  /** Send one notification on the listen's stream. */
  readonly notify: (notification: ListenNotification) => void;
  /** Every acknowledged task has ended (its last state sent) or is gone; may be called by start(). */
  readonly ended: () => void;
}

/**
 * One listen's tasks: each acknowledged task's state once the acknowledgement is out (what it is
 * then, so no change between the task's creation and the listen is missed), then each change of
 * its status or of its outstanding requests, as notifications/tasks carrying the DetailedTask
 * tasks/get would answer. A task is followed until it ends; the listen's tasks end with the last.
 */
export class TaskListen {
  /** Per followed task: the state last sent, and how to stop following it. */
  private readonly followed = new Map<string, { told: string; readonly stop: () => void }>();
  private closed = false;

  constructor(private readonly options: TaskListenOptions) {}

  start(): void {
    const { feed, principal, taskIds } = this.options;
    for (const taskId of taskIds) {
      const entry = { told: '', stop: () => {} };
      this.followed.set(taskId, entry);
      entry.stop = feed.follow(taskId, principal, (record) => this.seen(taskId, record));
    }
    if (taskIds.length === 0) this.finish();
  }

  /** Stop following (the listen was cancelled, its stream is gone, or the server is closing). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const entry of this.followed.values()) entry.stop();
    this.followed.clear();
  }

  private seen(taskId: string, record: TaskRecord | undefined): void {
    const entry = this.followed.get(taskId);
    if (this.closed || !entry) return;
    if (record && state(record) !== entry.told) {
      entry.told = state(record);
      const params = { ...detailedTask(record, ''), _meta: { [SUBSCRIPTION_ID_META_KEY]: this.options.id } };
      this.options.notify({ method: 'notifications/tasks', params });
    }
    if (record && !ENDED.has(record.status)) return;
    entry.stop();
    this.followed.delete(taskId);
    if (this.followed.size === 0) this.finish();
  }

  private finish(): void {
    this.close();
    this.options.ended();
  }
}

/** What a listener is told again for: a new status, or other requests outstanding. */
function state(record: TaskRecord): string {
  return `${record.status} ${Object.keys(record.inputRequests).sort().join(',')}`;
}

/** Open listens for tasks, counted per owner (a stdio connection, an HTTP principal). */
export class ListenCounts {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Count one more for `owner`; false when it has `max` open already. */
  take(owner: string): boolean {
    const open = this.open.get(owner) ?? 0;
    if (open >= this.max) return false;
    this.open.set(owner, open + 1);
    return true;
  }

  release(owner: string): void {
    const open = (this.open.get(owner) ?? 1) - 1;
    if (open <= 0) this.open.delete(owner);
    else this.open.set(owner, open);
  }
}
