import {
  type JSONRPCMessage,
  type MessageExtraInfo,
  ProtocolErrorCode,
  SUBSCRIPTION_ID_META_KEY,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import type { Tasks } from '../../tasks/index.js';
import { LOCAL_PRINCIPAL } from '../../util/index.js';
import type { TaskFeed } from './feed.js';
import { acknowledge, ListenCounts, listenEnd, TaskListen } from './listen.js';
import {
  type ListenError,
  type ListenId,
  MAX_TASK_LISTENS,
  readTaskListen,
  tooManyListens,
} from './request.js';

/** A listen whose acknowledgement is being written; `wanted` goes false if it is cancelled first. */
interface Pending {
  readonly acked: Promise<string[]>;
  wanted: boolean;
}

/** How many ends of listens are remembered, so that the SDK's end of one is not sent a second time. */
const ENDS_KEPT = 64;

/**
 * The stdio connection's listens for tasks. The SDK's entry serves subscriptions/listen itself and
 * keeps only the core filter, so this sits between it and the wire: a listen naming `taskIds` is
 * checked here (the extension declared, bounds) and passed on; the SDK's acknowledgement is held
 * until this principal's tasks among the ids are known and goes out with them; then their
 * notifications/tasks follow on the same channel, tagged with the listen's id. A listen that
 * follows only tasks ends (its graceful result) once they have all ended.
 */
export class TaskListenTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  private readonly pending = new Map<ListenId, Pending>();
  private readonly open = new Map<ListenId, TaskListen>();
  /** Listens ended here, newest last (the SDK was told to forget them; a late end of its own is dropped). */
  private readonly ends = new Set<ListenId>();
  private readonly counts = new ListenCounts(MAX_TASK_LISTENS);

  constructor(
    private readonly wire: Transport,
    private readonly tasks: Tasks,
    private readonly feed: TaskFeed,
  ) {}

  async start(): Promise<void> {
    this.wire.onmessage = (message, extra) => this.receive(message, extra);
    this.wire.onerror = (error) => this.onerror?.(error);
    this.wire.onclose = () => {
      this.closeAll();
      this.onclose?.();
    };
    await this.wire.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const id = subscriptionOf(message);
    const pending = id === undefined ? undefined : this.pending.get(id);
    if (id !== undefined && pending) return this.acknowledge(id, pending, message, options);
    if ('id' in message && !('method' in message) && this.isListen(message.id)) {
      if ('result' in message && this.ends.delete(message.id)) return; // ended here already
      this.stop(message.id); // the SDK refused it, or ended it (closing)
    }
    return this.wire.send(message, options);
  }

  async close(): Promise<void> {
    this.closeAll();
    await this.wire.close();
  }

  private receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const listen = readTaskListen(message);
    if (listen === undefined) {
      const cancelled = cancelledId(message);
      if (cancelled !== undefined) this.stop(cancelled);
      this.onmessage?.(message, extra);
      return;
    }
    if (listen.kind === 'refused') {
      this.refuse(listen.id, listen.error);
      return;
    }
    const refusal = this.admit(listen.id);
    if (refusal) {
      this.refuse(listen.id, refusal);
      return;
    }
    this.ends.delete(listen.id);
    const acked = acknowledge(this.tasks, LOCAL_PRINCIPAL, listen.taskIds);
    this.pending.set(listen.id, { acked, wanted: true });
    this.onmessage?.(message, extra); // the SDK acknowledges the core filter, and holds the listen
  }

  /** Why a listen for tasks with this id cannot open now (counted open when it can). */
  private admit(id: ListenId): ListenError | undefined {
    if (this.pending.has(id) || this.open.has(id))
      return {
        code: ProtocolErrorCode.InvalidRequest,
        message: `a listen with id ${JSON.stringify(id)} is open already`,
      };
    if (!this.counts.take(LOCAL_PRINCIPAL)) return tooManyListens('listens for tasks', 'on this connection');
    return undefined;
  }

  /** The SDK's acknowledgement, sent with the tasks acknowledged; then their states follow. */
  private async acknowledge(
    id: ListenId,
    pending: Pending,
    message: JSONRPCMessage,
    options?: TransportSendOptions,
  ): Promise<void> {
    const params = (message as { params: { notifications?: Record<string, unknown> } }).params;
    const core = params.notifications ?? {};
    const taskIds = await pending.acked;
    this.pending.delete(id);
    const notifications = { ...core, taskIds };
    try {
      await this.wire.send({ ...message, params: { ...params, notifications } } as JSONRPCMessage, options);
    } catch (error) {
      if (pending.wanted) this.counts.release(LOCAL_PRINCIPAL); // never opened
      throw error;
    }
    if (!pending.wanted) return;
    const listen = new TaskListen({
      feed: this.feed,
      principal: LOCAL_PRINCIPAL,
      id,
      taskIds,
      notify: (notification) => this.notify(notification),
      ended: () => this.ended(id, Object.keys(core).length === 0),
    });
    this.open.set(id, listen);
    listen.start();
  }

  /** A listen's tasks have all ended: one that followed nothing else ends too. */
  private ended(id: ListenId, tasksOnly: boolean): void {
    if (!this.open.delete(id)) return;
    this.counts.release(LOCAL_PRINCIPAL);
    if (!tasksOnly) return;
    this.ends.add(id);
    if (this.ends.size > ENDS_KEPT) this.ends.delete(this.ends.values().next().value as ListenId);
    this.wire
      .send({ jsonrpc: '2.0', ...listenEnd(id) } as JSONRPCMessage)
      .catch((error: Error) => this.onerror?.(error));
    // The SDK forgets it as it would on the client's cancel (its own end would come at shutdown).
    const forget = { requestId: id, reason: 'every task it listened to has ended' };
    this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: forget });
  }

  private notify(notification: { method: string; params: Record<string, unknown> }): void {
    this.wire
      .send({ jsonrpc: '2.0', ...notification } as JSONRPCMessage)
      .catch((error: Error) => this.onerror?.(error));
  }

  private isListen(id: unknown): id is ListenId {
    return (
      (typeof id === 'string' || typeof id === 'number') &&
      (this.pending.has(id) || this.open.has(id) || this.ends.has(id))
    );
  }

  /** The client cancelled it, the SDK refused or ended it: nothing more is sent for it. */
  private stop(id: ListenId): void {
    const pending = this.pending.get(id);
    if (pending) pending.wanted = false;
    const listen = this.open.get(id);
    if (!pending && !listen) return;
    this.pending.delete(id);
    this.open.delete(id);
    listen?.close();
    this.counts.release(LOCAL_PRINCIPAL);
  }

  private closeAll(): void {
    for (const id of [...this.pending.keys(), ...this.open.keys()]) this.stop(id);
  }

  private refuse(id: ListenId, error: ListenError): void {
    this.wire.send({ jsonrpc: '2.0', id, error } as JSONRPCMessage).catch((e: Error) => this.onerror?.(e));
  }
}

/** The listen an acknowledgement belongs to. */
function subscriptionOf(message: JSONRPCMessage): ListenId | undefined {
  if (!('method' in message) || message.method !== 'notifications/subscriptions/acknowledged')
    return undefined;
  const meta = (message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const id = meta?.[SUBSCRIPTION_ID_META_KEY];
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

function cancelledId(message: JSONRPCMessage): ListenId | undefined {
  if (!('method' in message) || message.method !== 'notifications/cancelled' || 'id' in message)
    return undefined;
  const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}
