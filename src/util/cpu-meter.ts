import { AsyncLocalStorage } from 'node:async_hooks';

// The CPU time a gated run's processes used, carried back to the gate without threading a counter
// through every tool: the gate meters `execute` (withCpuMeter), the engine charges what its
// sandbox reports (chargeCpu). Nothing is charged outside a meter (warm-pool refills, the CLI).

/** What a metered piece of work has been charged so far, in µs of CPU. */
export interface CpuMeter {
  usec: number;
}

const current = new AsyncLocalStorage<CpuMeter>();

/** Run `task` with `meter` counting the CPU charged by everything it starts. */
export function withCpuMeter<T>(meter: CpuMeter, task: () => T): T {
  return current.run(meter, task);
}

/** Whether what runs now is metered: a backend that must sample to count CPU does so only then. */
export function metering(): boolean {
  return current.getStore() !== undefined;
}

/** Charge `usec` of CPU to the enclosing meter, if any (negative or unknown amounts are ignored). */
export function chargeCpu(usec: number | undefined): void {
  const meter = current.getStore();
  if (meter && usec !== undefined && usec > 0) meter.usec += usec;
}

/** The CPU used between two readings of a cumulative counter (undefined if either is missing). */
export function cpuBetween(before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined ? undefined : Math.max(0, after - before);
}
