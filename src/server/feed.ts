import { AsyncLocalStorage } from 'node:async_hooks';
import type { OutputStream } from '../engine/index.js';
import { type Outcome, outcomeOf } from '../metrics/index.js';

/** Output kept per run: the tail, so a page opened mid-run sees the latest lines. */
const MAX_OUTPUT_CHARS = 16_000;
/** Finished runs kept for the page; with MAX_OUTPUT_CHARS this bounds the feed to ~2 MB. */
const MAX_RECENT = 100;

/** One run as the dashboard shows it. */
export interface LiveRun {
  readonly id: string;
  readonly principal: string;
  readonly tool: string;
  readonly language: string;
  readonly session_id: string | null;
  /** The first line of the code, shortened. */
  readonly code: string;
  readonly started_at: number;
  ended_at: number | null;
  status: 'running' | 'done' | 'failed';
  exit_code: number | null;
  execution_id: string | null;
  /**
   * How it ended, as the metrics' `outcome` label says it ('failed': it threw, no result), or
   * 'waiting' (a send that returned waiting_for_input: not a failure); null while it runs.
   */
  outcome: Outcome | null;
  /** With outcome 'limit': the result's `limit` (memory, processes, cpu, file_size, disk). */
  limit: string | null;
  output: string;
}

/** What a watcher is told: a run started or ended (no output), or a run's new output. */
export type FeedEvent =
  | { readonly type: 'run'; readonly run: Omit<LiveRun, 'output'> }
  | { readonly type: 'output'; readonly id: string; readonly stream: OutputStream; readonly text: string };

export interface RunLabel {
  readonly tool: string;
  readonly language: string;
  readonly code: string;
  readonly sessionId: string | null;
}

interface Watcher {
  /** undefined: every principal's runs (an admin). */
  readonly principal: string | undefined;
  readonly send: (event: FeedEvent) => void;
}

const live = new AsyncLocalStorage<{ feed: RunFeed; run: LiveRun }>();

/**
 * The runs in progress and the recent ones, in memory, for serve --http's dashboard: the gate
 * tracks each approved run, withProgress tees its output here, watchers (the dashboard's SSE
 * streams) hear of each change. Bounded: a tail of each run's output, the last 100 runs.
 */
export class RunFeed {
  private readonly runs = new Map<string, LiveRun>();
  private readonly watchers = new Set<Watcher>();
  private sequence = 0;

  /** Run `execute` as a tracked run of `principal`; its output reaches the feed through withProgress. */
  async track<R>(
    label: RunLabel,
    principal: string,
    execute: () => Promise<R>,
    facts: (result: R) => { execution_id: string | null; exit_code: number | null },
  ): Promise<R> {
    const run: LiveRun = {
      id: `r${++this.sequence}`,
      principal,
      tool: label.tool,
      language: label.language,
      session_id: label.sessionId,
      code: firstLine(label.code),
      started_at: Date.now(),
      ended_at: null,
      status: 'running',
      exit_code: null,
      execution_id: null,
      outcome: null,
      limit: null,
      output: '',
    };
    this.runs.set(run.id, run);
    this.trim();
    this.announce(run);
    try {
      const result = await live.run({ feed: this, run }, execute);
      const { execution_id, exit_code } = facts(result);
      const { outcome, limit } = ending(result);
      // A send waiting for input asks a question (exit_code null): not a failure, here as in the chart.
      const status = exit_code === 0 || outcome === 'waiting' ? 'done' : 'failed';
      Object.assign(run, { execution_id, exit_code, status, outcome, limit });
      return result;
    } catch (error) {
      run.status = 'failed';
      run.outcome = 'failed';
      throw error;
    } finally {
      run.ended_at = Date.now();
      this.announce(run);
    }
  }

  /** The runs `principal` may see (undefined: all), newest first, with their output. */
  list(principal: string | undefined): LiveRun[] {
    return [...this.runs.values()].filter((run) => visible(run, principal)).reverse();
  }

  /** Hear of every change `principal` may see until the returned function is called. */
  watch(principal: string | undefined, send: (event: FeedEvent) => void): () => void {
    const watcher = { principal, send };
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  private output(run: LiveRun, stream: OutputStream, text: string): void {
    const tagged = stream === 'stderr' ? `[stderr] ${text}` : text;
    run.output = (run.output + tagged).slice(-MAX_OUTPUT_CHARS);
    this.tell(run, { type: 'output', id: run.id, stream, text: tagged });
  }

  private announce(run: LiveRun): void {
    const { output: _output, ...rest } = run;
    this.tell(run, { type: 'run', run: rest });
  }

  private tell(run: LiveRun, event: FeedEvent): void {
    for (const watcher of this.watchers) if (visible(run, watcher.principal)) watcher.send(event);
  }

  /** Forget the oldest finished runs past MAX_RECENT (running ones stay, however many). */
  private trim(): void {
    let extra = this.runs.size - MAX_RECENT;
    for (const [id, run] of this.runs) {
      if (extra <= 0) break;
      if (run.status === 'running') continue;
      this.runs.delete(id);
      extra--;
    }
  }

  /**
   * Where the current run's output goes besides the client, or undefined outside a tracked run
   * (stdio has no feed). withProgress calls it.
   */
  static currentOutput(): ((stream: OutputStream, text: string) => void) | undefined {
    const current = live.getStore();
    if (!current) return undefined;
    return (stream, text) => current.feed.output(current.run, stream, text);
  }
}

/** A result's outcome (outcomeOf: one classifier for metrics and the page) and its limit. */
function ending(result: unknown): Pick<LiveRun, 'outcome' | 'limit'> {
  const fields = (typeof result === 'object' && result !== null ? result : {}) as { limit?: unknown };
  const outcome = outcomeOf(result);
  return { outcome, limit: outcome === 'limit' ? String(fields.limit) : null };
}

function visible(run: LiveRun, principal: string | undefined): boolean {
  return principal === undefined || run.principal === principal;
}

function firstLine(code: string): string {
  const line = code.trimStart().split('\n', 1)[0] ?? '';
  const more = line.length > 120 || code.trim().includes('\n');
  return more ? `${line.slice(0, 120)} …` : line;
}
