import { AsyncLocalStorage } from 'node:async_hooks';

/** A span's time: milliseconds since the epoch, with the fraction performance.now() gives. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export interface Phase {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

/** One tool call being traced: its start and the phases its run went through so far. */
export interface OpenCall {
  readonly start: number;
  readonly phases: Phase[];
  /** False once the call has answered: a task's later phases are not the call's. */
  open: boolean;
}

/** What a traced call ends with: one span, its phases as child spans. */
export interface FinishedCall {
  readonly tool: string;
  readonly principal: string;
  readonly language: string | undefined;
  readonly sandboxMode: string | undefined;
  readonly outcome: string;
  readonly executionId: string | undefined;
  /** The error's code when the call answered isError. */
  readonly errorCode: string | undefined;
  readonly start: number;
  readonly end: number;
  readonly phases: readonly Phase[];
}

const calls = new AsyncLocalStorage<OpenCall>();

/** Run a tool call's handler as `call`: phase() inside it records into it. */
export function inCall<T>(call: OpenCall, work: () => T): T {
  return calls.run(call, work);
}

/**
 * Start a phase (approval wait, slot wait, run) of the traced call around us: the returned
 * function ends it. Undefined when no call is traced (tracing off: one AsyncLocalStorage read).
 */
export function phase(name: string): (() => void) | undefined {
  const call = calls.getStore();
  if (!call) return undefined;
  const start = now();
  return () => {
    if (call.open) call.phases.push({ name, start, end: now() });
  };
}

/** Where finished calls go as spans; flush() sends what is batched now, shutdown() the rest. */
export interface Tracing {
  record(call: FinishedCall): void;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}
