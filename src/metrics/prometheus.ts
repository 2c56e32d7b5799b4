import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type MetricSources, type Outcome, outcomeOf, type PrometheusMetrics } from './types.js';

// Runs last from milliseconds (a warm print) to the longest timeout (minutes).
const RUN_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const WAIT_BUCKETS = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60];

interface RunResult {
  readonly sandbox_mode?: unknown;
  readonly duration_ms?: unknown;
  readonly warm?: unknown;
  readonly session_id?: unknown;
  readonly tool_calls?: ReadonlyArray<{ readonly success: boolean }>;
  readonly tool_calls_omitted?: ReadonlyArray<{ readonly success: boolean; readonly count: number }>;
}

/**
 * One (tool, language, mode, outcome), found by a Map lookup per run. Its count is a plain number
 * handed to prom-client at each scrape (collect): prom-client's own inc hashes the labels every
 * time (~0.4 µs). The histogram's observe cannot be deferred so (it needs every value).
 */
interface RunSeries {
  readonly labels: Readonly<Record<'tool' | 'language' | 'sandbox_mode' | 'outcome', string>>;
  pending: number;
  readonly seconds: { observe(value: number): void };
}

export function createPrometheusMetrics(): PrometheusMetrics {
  const register = new Registry();
  collectDefaultMetrics({ register });
  // Made in this order, which is the order /metrics shows them in.
  const runs = runMetrics([register]);
  const pool = warmPoolCounts([register]);
  const { approvals, slotWait, quota, bridgeCalls } = gateMetrics([register]);
  return {
    runEnded(tool, language, result, wallMs) {
      const fields = (typeof result === 'object' && result !== null ? result : {}) as RunResult;
      const mode = typeof fields.sandbox_mode === 'string' ? fields.sandbox_mode : 'none';
      const run = runs.seriesOf(tool, language, mode, outcomeOf(result));
      run.pending += 1;
      run.seconds.observe((typeof fields.duration_ms === 'number' ? fields.duration_ms : wallMs) / 1000);
      if (typeof fields.warm === 'boolean' && fields.session_id === undefined) {
        if (fields.warm) pool.hit += 1;
        else pool.miss += 1;
      }
      if (fields.tool_calls) countCalls(bridgeCalls, fields);
    },
    runFailed(tool, language, wallMs) {
      const run = runs.seriesOf(tool, language, 'none', 'failed');
      run.pending += 1;
      run.seconds.observe(wallMs / 1000);
    },
    approvalAsked: () => approvals.inc({ result: 'asked' }),
    approvalAnswered: (approved) => approvals.inc({ result: approved ? 'approved' : 'denied' }),
    slotWaited: (ms) => slotWait.observe(ms / 1000),
    quotaRefused: (limit) => quota.inc({ limit }),
    watch: (sources: MetricSources) => registerGauges(register, sources),
    contentType: register.contentType,
    text: () => register.metrics(),
  };
}

/** The runs' count and durations, by tool, language, sandbox mode (and outcome, for the count). */
function runMetrics(registers: Registry[]) {
  const series = new Map<string, RunSeries>();
  new Counter({
    name: 'codexec_runs_total',
    help: 'Runs the gate let through, by tool, language, sandbox mode and outcome',
    labelNames: ['tool', 'language', 'sandbox_mode', 'outcome'] as const,
    registers,
    collect() {
      for (const run of series.values()) {
        if (run.pending === 0) continue;
        this.inc(run.labels, run.pending);
        run.pending = 0;
      }
    },
  });
  const seconds = new Histogram({
    name: 'codexec_run_duration_seconds',
    help: "Runs' durations (the run's own where its result says, else from approval to result)",
    labelNames: ['tool', 'language', 'sandbox_mode'] as const,
    buckets: RUN_BUCKETS,
    registers,
  });
  const seriesOf = (tool: string, language: string, mode: string, outcome: Outcome): RunSeries => {
    const key = `${tool}\0${language}\0${mode}\0${outcome}`;
    let found = series.get(key);
    if (!found) {
      found = {
        labels: { tool, language, sandbox_mode: mode, outcome },
        pending: 0,
        seconds: seconds.labels(tool, language, mode),
      };
      series.set(key, found);
    }
    return found;
  };
  return { seriesOf };
}

/** One-shot runs by warm pool hit or miss, counted as plain numbers and handed over at each scrape. */
function warmPoolCounts(registers: Registry[]): { hit: number; miss: number } {
  const pool = { hit: 0, miss: 0 };
  new Counter({
    name: 'codexec_warm_pool_runs_total',
    help: 'One-shot runs by whether a pre-started pool process ran them (hit) or a cold start (miss)',
    labelNames: ['result'] as const,
    registers,
    collect() {
      for (const result of ['hit', 'miss'] as const) {
        this.inc({ result }, pool[result]); // 0 too: both series show from the first scrape
        pool[result] = 0;
      }
    },
  });
  return pool;
}

/** What the gate and code mode count: approvals, waits for a run slot, quota refusals, bridge calls. */
function gateMetrics(registers: Registry[]) {
  return {
    approvals: new Counter({
      name: 'codexec_approvals_total',
      help: 'Approval forms asked, and answers: approved or denied (declined, cancelled, timed out)',
      labelNames: ['result'] as const,
      registers,
    }),
    slotWait: new Histogram({
      name: 'codexec_run_slot_wait_seconds',
      help: 'How long runs that found every run slot taken waited for one',
      buckets: WAIT_BUCKETS,
      registers,
    }),
    quota: new Counter({
      name: 'codexec_quota_refusals_total',
      help: 'Calls refused QUOTA_EXCEEDED, by the limit that refused them',
      labelNames: ['limit'] as const,
      registers,
    }),
    bridgeCalls: new Counter({
      name: 'codexec_bridge_calls_total',
      help: 'Code mode: downstream tool calls made by runs, by success',
      labelNames: ['success'] as const,
      registers,
    }),
  };
}

function countCalls(counter: Counter<'success'>, fields: RunResult): void {
  let ok = 0;
  let failed = 0;
  for (const call of fields.tool_calls ?? []) {
    if (call.success) ok += 1;
    else failed += 1;
  }
  for (const count of fields.tool_calls_omitted ?? []) {
    if (count.success) ok += count.count;
    else failed += count.count;
  }
  if (ok > 0) counter.inc({ success: 'true' }, ok);
  if (failed > 0) counter.inc({ success: 'false' }, failed);
}

/** Gauges read at each scrape: nothing on a run's path keeps them. */
function registerGauges(register: Registry, sources: MetricSources): void {
  const registers = [register];
  new Gauge({
    name: 'codexec_warm_pool_ready',
    help: 'Warm pool: pre-started processes ready now, per interpreter',
    labelNames: ['interpreter'] as const,
    registers,
    collect() {
      this.reset();
      for (const [interpreter, ready] of Object.entries(sources.pool().ready))
        this.set({ interpreter }, ready);
    },
  });
  new Gauge({
    name: 'codexec_warm_pool_size',
    help: 'Warm pool: the target size per interpreter (CODEXEC_POOL_SIZE)',
    registers,
    collect() {
      this.set(sources.pool().size);
    },
  });
  new Gauge({
    name: 'codexec_sessions',
    help: 'Live REPL sessions, all principals together',
    registers,
    collect() {
      this.set(sources.sessions());
    },
  });
  new Gauge({
    name: 'codexec_run_slots',
    help: 'Run slots (CODEXEC_MAX_CONCURRENT_RUNS): running, queued (waiting for one) and max',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const { running, queued, max } = sources.slots();
      this.set({ state: 'running' }, running);
      this.set({ state: 'queued' }, queued);
      this.set({ state: 'max' }, max);
    },
  });
  new Gauge({
    name: 'codexec_approvals_pending',
    help: 'Approvals waiting for an answer now',
    registers,
    collect() {
      this.set(sources.pendingApprovals());
    },
  });
  new Gauge({
    name: 'codexec_bridge_circuit',
    help: "Code mode: 1 for each downstream server's current circuit state (closed, open, half-open)",
    labelNames: ['server', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const { name, circuit } of sources.circuits()) {
        for (const state of ['closed', 'open', 'half-open'])
          this.set({ server: name, state }, state === circuit ? 1 : 0);
      }
    },
  });
}
