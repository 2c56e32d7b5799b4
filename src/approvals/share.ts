import { z } from 'zod';
import { DEAD_AFTER_MS, migrateReplicas, NOW_MS, type Postgres, replicaId } from '../store/index.js';
import { lazily, log } from '../util/index.js';
import {
  type ApprovalEvent,
  type ApprovalPeers,
  type ApprovalQueue,
  ownCall,
  type QueuedApproval,
} from './dashboard.js';
import { DECISIONS, type Decision } from './question.js';

const MIGRATIONS = [
  `CREATE TABLE codexec_approvals (
     id TEXT PRIMARY KEY,
     replica_id TEXT NOT NULL,
     principal TEXT NOT NULL,
     card JSONB NOT NULL,
     asked_ms BIGINT NOT NULL,
     decision TEXT
   );
   CREATE INDEX codexec_approvals_replica ON codexec_approvals (replica_id)`,
  // Who decided, for the audit of the replica the call waits on.
  'ALTER TABLE codexec_approvals ADD COLUMN decided_by TEXT',
];

/** How often a replica looks for decisions on its approvals (and, while a page watches, for others'). */
const POLL_MS = 400;

/** A card as stored, made on first use: a server without a store reads none. */
const cardSchema = lazily(() =>
  z.object({
    id: z.string(),
    principal: z.string(),
    // Cards of a replica from before host questions came to the dashboard are runs.
    kind: z.enum(['run', 'host']).default('run'),
    tool: z.string(),
    language: z.string().nullable(),
    session_id: z.string().nullable(),
    code: z.string(),
    code_chars: z.number(),
    powers: z.string().nullable(),
    place: z.string().nullable().optional(),
    reason: z.string(),
    host: z.string().optional(),
    port: z.number().int().optional(),
    asked_at: z.number(),
  }),
);
const decisionSchema = lazily(() => z.enum(DECISIONS));

/**
 * The dashboard's approval queue across replicas (CODEXEC_STORE=postgres): each replica publishes
 * the approvals waiting on it as rows (the card the page shows), a page on any replica lists
 * every live replica's and writes its decision into the row, and the replica the call waits on
 * picks the decision up within POLL_MS. The row goes when the approval ends, however it ends.
 * Polling runs only while this replica has approvals waiting or a page watching.
 */
export class SharedApprovals implements ApprovalPeers {
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  /** Inserts and deletes in order: an approval that ends at once must not leave its row behind. */
  private writes: Promise<unknown> = Promise.resolve();
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly pg: Postgres,
    private readonly queue: ApprovalQueue,
    /** This replica's id (tests run two in one process). */
    private readonly id = replicaId(),
  ) {}

  async start(): Promise<void> {
    await migrateReplicas(this.pg);
    await this.pg.migrate('approvals', MIGRATIONS);
    this.queue.attachPeers(this);
    this.stopListening = this.queue.onLocal((event) => this.publish(event));
    this.timer = setInterval(() => void this.poll(), POLL_MS).unref();
  }

  async decide(id: string, decision: Decision, decider: string): Promise<QueuedApproval | undefined> {
    // The decider is an approver (the queue checked); its own call's approval stays undecided.
    const [row] = await this.pg.query<{ card: unknown; own: boolean }>(
      `WITH target AS (
         SELECT id, principal = $4 AS own FROM codexec_approvals
         WHERE id = $1 AND decision IS NULL AND replica_id <> $3
       ), decided AS (
         UPDATE codexec_approvals a SET decision = $2, decided_by = $4
         FROM target t WHERE a.id = t.id AND NOT t.own AND a.decision IS NULL
         RETURNING a.card
       )
       SELECT (SELECT card FROM decided) AS card, own FROM target`,
      [id, decision, this.id, decider],
    );
    if (row?.own) throw ownCall(decider);
    return row?.card ? cardSchema().parse(row.card) : undefined;
  }

  /** Stop polling and take this replica's rows away (its approvals end with it). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopListening?.();
    await this.writes;
    await this.pg
      .query('DELETE FROM codexec_approvals WHERE replica_id = $1', [this.id])
      .catch((error: Error) => log('warn', `approvals: ${error.message}`));
  }

  private publish(event: ApprovalEvent): void {
    const write =
      event.type === 'approval'
        ? () =>
            this.pg.query(
              `INSERT INTO codexec_approvals (id, replica_id, principal, card, asked_ms) VALUES ($1, $2, $3, $4, $5)`,
              [event.approval.id, this.id, event.approval.principal, event.approval, event.approval.asked_at],
            )
        : () =>
            this.pg.query('DELETE FROM codexec_approvals WHERE id = $1 AND replica_id = $2', [
              event.id,
              this.id,
            ]);
    this.writes = this.writes
      .then(write)
      .catch((error: Error) => log('warn', `approvals: cannot share with other replicas: ${error.message}`));
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      if (this.queue.waitingHere > 0) await this.collectDecisions();
      // Other replicas' approvals are fetched only while a page watches; a list call sees the last fetch.
      if (this.queue.watched) await this.fetchOthers();
      else this.queue.setRemote([]);
    } catch (error) {
      log('warn', `approvals: ${(error as Error).message}`);
    } finally {
      this.polling = false;
    }
  }

  private async collectDecisions(): Promise<void> {
    const rows = await this.pg.query<{ id: string; decision: string; decided_by: string | null }>(
      'SELECT id, decision, decided_by FROM codexec_approvals WHERE replica_id = $1 AND decision IS NOT NULL',
      [this.id],
    );
    for (const row of rows) {
      const decision = decisionSchema().safeParse(row.decision);
      // The decider was checked when the decision was written (decide above). One that ended
      // here meanwhile (timed out, withdrawn, the client answered first) takes its row with it.
      if (decision.success) this.queue.settle(row.id, decision.data, row.decided_by ?? 'another replica');
    }
  }

  refresh(): Promise<void> {
    return this.fetchOthers();
  }

  private async fetchOthers(): Promise<void> {
    const rows = await this.pg.query<{ card: unknown }>(
      `SELECT a.card FROM codexec_approvals a JOIN codexec_replicas r ON r.replica_id = a.replica_id
       WHERE a.replica_id <> $1 AND a.decision IS NULL AND r.heartbeat_ms > ${NOW_MS} - $2
       ORDER BY a.asked_ms`,
      [this.id, DEAD_AFTER_MS],
    );
    const cards: QueuedApproval[] = [];
    for (const row of rows) {
      const card = cardSchema().safeParse(row.card);
      if (card.success) cards.push(card.data);
    }
    this.queue.setRemote(cards);
  }
}
