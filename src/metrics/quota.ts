import type { Metrics } from './types.js';

// A process has at most one metrics registry (serve --http's): quota checks record their refusals
// here without the services being threaded to them. Nothing is recorded until one is set.
let sink: Metrics | undefined;

/** Count one QUOTA_EXCEEDED refusal (codexec_quota_refusals_total{limit}); free when not serving metrics. */
export function recordQuotaRefusal(limit: string): void {
  sink?.quotaRefused(limit);
}

/** Where recordQuotaRefusal counts (serve --http sets its registry; undefined stops it). */
export function setQuotaSink(metrics: Metrics | undefined): void {
  sink = metrics;
}
