// One /api/events stream for the whole page: the runs (Live runs view) and the approvals waiting
// (Approvals view and the header's badge), kept from the snapshot and each event after it.
import { useEffect, useState } from 'preact/hooks';
import { follow } from './api.js';

/** A run as /api/events sends it (src/server/feed.ts LiveRun). */
export interface Run {
  id: string;
  principal: string;
  tool: string;
  language: string;
  session_id: string | null;
  code: string;
  started_at: number;
  ended_at: number | null;
  status: 'running' | 'done' | 'failed';
  exit_code: number | null;
  execution_id: string | null;
  /** metrics' outcome (ok, error, timeout, cancelled, limit, failed) or 'waiting'; null while running. */
  outcome: string | null;
  /** With outcome 'limit': which (memory, processes, cpu, file_size, disk). */
  limit: string | null;
  output: string;
}

/** An approval waiting for the dashboard (src/approvals/dashboard.ts QueuedApproval). */
export interface Approval {
  id: string;
  principal: string;
  /** run: may this code run; host: may the running code connect to host:port. */
  kind: 'run' | 'host';
  tool: string;
  language: string | null;
  session_id: string | null;
  code: string;
  code_chars: number;
  powers: string | null;
  place?: string | null;
  reason: string;
  host?: string;
  port?: number;
  asked_at: number;
}

type Message =
  | { type: 'run'; run: Omit<Run, 'output'> }
  | { type: 'output'; id: string; text: string }
  | { type: 'approval'; approval: Approval }
  | { type: 'approval_gone'; id: string }
  | { runs: Run[]; approvals?: Approval[] };

export interface Feed {
  readonly runs: ReadonlyMap<string, Run>;
  readonly approvals: ReadonlyMap<string, Approval>;
  readonly connected: boolean;
}

const MAX_OUTPUT = 16_000;
const EMPTY: Feed = { runs: new Map(), approvals: new Map(), connected: false };

export function useFeed(): Feed {
  const [feed, setFeed] = useState<Feed>(EMPTY);
  useEffect(() => {
    const stop = new AbortController();
    void follow(
      (type, data) => setFeed((current) => apply(current, type, data as Message)),
      (connected) => setFeed((current) => ({ ...current, connected })),
      stop.signal,
    );
    return () => stop.abort();
  }, []);
  return feed;
}

function apply(current: Feed, type: string, message: Message): Feed {
  if (type === 'snapshot' && 'runs' in message) {
    return {
      ...current,
      runs: new Map(message.runs.map((run) => [run.id, run])),
      approvals: new Map((message.approvals ?? []).map((approval) => [approval.id, approval])),
    };
  }
  if ('approval' in message) {
    return { ...current, approvals: new Map(current.approvals).set(message.approval.id, message.approval) };
  }
  if (type === 'approval_gone' && 'id' in message) {
    const approvals = new Map(current.approvals);
    approvals.delete(message.id);
    return { ...current, approvals };
  }
  const runs = new Map(current.runs);
  if ('run' in message) {
    runs.set(message.run.id, { ...message.run, output: current.runs.get(message.run.id)?.output ?? '' });
  } else if ('text' in message) {
    const run = runs.get(message.id);
    if (run) runs.set(run.id, { ...run, output: (run.output + message.text).slice(-MAX_OUTPUT) });
  }
  return { ...current, runs };
}
