/** How a run ended, as the `outcome` label says it. */
export type Outcome = 'ok' | 'error' | 'timeout' | 'cancelled' | 'limit' | 'waiting' | 'failed';

/** The fields of a run's result (one-shot, send, command: all carry them) that decide its outcome. */
interface OutcomeFields {
  readonly success?: unknown;
  readonly exit_code?: unknown;
  readonly timed_out?: unknown;
  readonly cancelled?: unknown;
  readonly limit?: unknown;
  readonly waiting_for_input?: unknown;
}

/**
 * A result's outcome: a session send that returned waiting_for_input asked a question (no
 * failure); stopped (timeout, cancelled, a resource limit) before failed (success false or a
 * non-zero exit), else ok. A result without those fields (write_file, start_session) is ok.
 */
export function outcomeOf(result: unknown): Outcome {
  if (typeof result !== 'object' || result === null) return 'ok';
  const fields = result as OutcomeFields;
  if (fields.waiting_for_input === true) return 'waiting';
  if (fields.timed_out === true) return 'timeout';
  if (fields.cancelled === true) return 'cancelled';
  if (fields.limit !== undefined) return 'limit';
  if (fields.success === false) return 'error';
  if (typeof fields.exit_code === 'number' && fields.exit_code !== 0) return 'error';
  return 'ok';
}

/**
 * What the server tells its metrics, one call per fact where the fact happens (the gate). Over
 * stdio it is NO_METRICS: empty methods, nothing collected, prom-client never loaded.
 */
export interface Metrics {
  /** A run the gate let through gave its tool's result (`wallMs`: from approval to result). */
  runEnded(tool: string, language: string, result: unknown, wallMs: number): void;
  /** A run the gate let through threw instead (no slot, session gone, a broken sandbox). */
  runFailed(tool: string, language: string, wallMs: number): void;
  /** An approval form went to the client (or the dashboard). */
  approvalAsked(): void;
  approvalAnswered(approved: boolean): void;
  /** A run waited `ms` for a run slot (CODEXEC_MAX_CONCURRENT_RUNS). */
  slotWaited(ms: number): void;
  /** A quota refused a call (QUOTA_EXCEEDED); `limit` names which (max_sessions, runs_per_minute…). */
  quotaRefused(limit: string): void;
}

export const NO_METRICS: Metrics = {
  runEnded() {},
  runFailed() {},
  approvalAsked() {},
  approvalAnswered() {},
  slotWaited() {},
  quotaRefused() {},
};

/** What the gauges read at each scrape (never on a run's path). */
export interface MetricSources {
  /** The warm pool's target size and the processes ready now, per interpreter. */
  pool(): { readonly size: number; readonly ready: Readonly<Record<string, number>> };
  /** Live REPL sessions, all principals together. */
  sessions(): number;
  slots(): { readonly running: number; readonly queued: number; readonly max: number };
  pendingApprovals(): number;
  /** Code mode: each downstream server's circuit. */
  circuits(): ReadonlyArray<{ readonly name: string; readonly circuit: string }>;
}

/** The metrics of serve --http: the hooks, the gauges' sources, and the text GET /metrics answers. */
export interface PrometheusMetrics extends Metrics {
  watch(sources: MetricSources): void;
  readonly contentType: string;
  text(): Promise<string>;
}
