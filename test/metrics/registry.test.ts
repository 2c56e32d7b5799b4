// The metrics registry in process: outcomes from result fields, quota refusals recorded through
// recordQuotaRefusal once a registry is set, and gauges read from their sources at each scrape.
import { describe, expect, it } from 'vitest';
import { loadMetrics, outcomeOf, recordQuotaRefusal, setQuotaSink } from '../../src/metrics/index.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';

const SOURCES = {
  pool: () => ({ size: 2, ready: { python: 2, node: 1 } }),
  sessions: () => 3,
  slots: () => ({ running: 1, queued: 0, max: 8 }),
  pendingApprovals: () => 0,
  circuits: () => [{ name: 'github', circuit: 'open' }],
};

describe('metrics registry', () => {
  it('reads a result’s outcome, a stop before a failure', () => {
    expect(outcomeOf({ success: true, exit_code: 0, timed_out: false, cancelled: false })).toBe('ok');
    expect(outcomeOf({ success: false, exit_code: 2, timed_out: false, cancelled: false })).toBe('error');
    expect(outcomeOf({ success: false, exit_code: null, timed_out: true, cancelled: false })).toBe('timeout');
    expect(outcomeOf({ success: false, exit_code: null, timed_out: false, cancelled: true })).toBe(
      'cancelled',
    );
    expect(outcomeOf({ success: false, exit_code: null, timed_out: false, limit: 'memory' })).toBe('limit');
    expect(outcomeOf({ success: true, path: 'a.txt' })).toBe('ok');
  });

  it('counts quota refusals by limit once a registry is set, and nothing before', async () => {
    const metrics = await loadMetrics();
    recordQuotaRefusal('max_sessions'); // no registry yet: dropped
    setQuotaSink(metrics);
    try {
      recordQuotaRefusal('max_sessions');
      recordQuotaRefusal('max_sessions');
      recordQuotaRefusal('runs_per_minute');
    } finally {
      setQuotaSink(undefined);
    }
    const text = parsePrometheus(await metrics.text());
    expect(sampleValue(text, 'codexec_quota_refusals_total', { limit: 'max_sessions' })).toBe(2);
    expect(sampleValue(text, 'codexec_quota_refusals_total', { limit: 'runs_per_minute' })).toBe(1);
  });

  it('keeps one series per label set, and counts bridge calls from a result’s records', async () => {
    const metrics = await loadMetrics();
    const result = {
      success: true,
      exit_code: 0,
      duration_ms: 40,
      sandbox_mode: 'namespace',
      warm: true,
      tool_calls: [{ success: true }, { success: false }],
      tool_calls_omitted: [{ success: true, count: 5 }],
    };
    metrics.runEnded('execute_code', 'python', result, 55);
    metrics.runEnded('execute_code', 'python', result, 60);
    metrics.runFailed('execute_code', 'python', 3);
    const text = parsePrometheus(await metrics.text());
    const labels = { tool: 'execute_code', language: 'python', sandbox_mode: 'namespace' };
    expect(sampleValue(text, 'codexec_runs_total', { ...labels, outcome: 'ok' })).toBe(2);
    expect(sampleValue(text, 'codexec_runs_total', { outcome: 'failed', sandbox_mode: 'none' })).toBe(1);
    // The run's own duration (40 ms), not the wall time around it.
    expect(sampleValue(text, 'codexec_run_duration_seconds_sum', labels)).toBeCloseTo(0.08);
    expect(sampleValue(text, 'codexec_run_duration_seconds_bucket', { ...labels, le: '0.025' })).toBe(0);
    expect(sampleValue(text, 'codexec_run_duration_seconds_bucket', { ...labels, le: '0.05' })).toBe(2);
    expect(sampleValue(text, 'codexec_warm_pool_runs_total', { result: 'hit' })).toBe(2);
    expect(sampleValue(text, 'codexec_bridge_calls_total', { success: 'true' })).toBe(12);
    expect(sampleValue(text, 'codexec_bridge_calls_total', { success: 'false' })).toBe(2);
  });

  it('reads the gauges from their sources at each scrape', async () => {
    const metrics = await loadMetrics();
    metrics.watch(SOURCES);
    const text = parsePrometheus(await metrics.text());
    expect(sampleValue(text, 'codexec_warm_pool_ready', { interpreter: 'node' })).toBe(1);
    expect(sampleValue(text, 'codexec_sessions')).toBe(3);
    expect(sampleValue(text, 'codexec_run_slots', { state: 'max' })).toBe(8);
    expect(sampleValue(text, 'codexec_bridge_circuit', { server: 'github', state: 'open' })).toBe(1);
    expect(sampleValue(text, 'codexec_bridge_circuit', { server: 'github', state: 'closed' })).toBe(0);
  });
});
