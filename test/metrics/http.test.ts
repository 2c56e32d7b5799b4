// GET /metrics on serve --http: Prometheus text from the server's own
// registry, behind the MCP endpoint's bearer tokens unless CODEXEC_METRICS_PUBLIC=true; its
// counters move with the runs the gate lets through.
import { rmSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { type Exposition, parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { callTool } from '../helpers/server.js';

const TOKEN = 'metrics-token-0123456789';

async function scrape(url: string, token?: string): Promise<Exposition> {
  const response = await fetch(new URL('/metrics', url), {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await response.text());
}

describe('GET /metrics', () => {
  let server: HttpServer;
  let client: Client;

  beforeAll(async () => {
    server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN } });
    client = await connectHttp(server.url, TOKEN, 'legacy');
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await server?.stop();
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  it('refuses a scrape without the bearer token, or with a wrong one', async () => {
    const wrong: Record<string, string>[] = [{}, { authorization: 'Bearer not-the-token-at-all' }];
    for (const headers of wrong) {
      const response = await fetch(new URL('/metrics', server.url), { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="codexec"');
      expect(await response.text()).not.toContain('codexec_runs_total');
    }
  });

  it('is Prometheus text with codexec metrics and the process default metrics', async () => {
    const metrics = await scrape(server.url, TOKEN);
    expect(metrics.types.get('codexec_runs_total')).toBe('counter');
    expect(metrics.types.get('codexec_run_duration_seconds')).toBe('histogram');
    expect(metrics.types.get('codexec_quota_refusals_total')).toBe('counter');
    expect(metrics.types.get('codexec_sessions')).toBe('gauge');
    expect(sampleValue(metrics, 'process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(sampleValue(metrics, 'codexec_run_slots', { state: 'max' })).toBeGreaterThan(0);
  });

  it('counts runs by tool, language, sandbox mode and outcome, with their durations', async () => {
    const ok = { tool: 'execute_code', language: 'python', outcome: 'ok' };
    const before = await scrape(server.url, TOKEN);
    const runs = [];
    for (const code of ['print(1)', 'print(2)']) {
      runs.push(
        await callTool<{ sandbox_mode: string }>(client, 'execute_code', { language: 'python', code }),
      );
    }
    const mode = runs[0]?.value.sandbox_mode ?? '';
    const after = await scrape(server.url, TOKEN);
    expect(sampleValue(after, 'codexec_runs_total', ok) - sampleValue(before, 'codexec_runs_total', ok)).toBe(
      2,
    );
    expect(sampleValue(after, 'codexec_runs_total', { ...ok, sandbox_mode: mode })).toBe(
      sampleValue(after, 'codexec_runs_total', ok),
    );
    const durations = { tool: 'execute_code', language: 'python', sandbox_mode: mode };
    expect(
      sampleValue(after, 'codexec_run_duration_seconds_count', durations) -
        sampleValue(before, 'codexec_run_duration_seconds_count', durations),
    ).toBe(2);
    expect(sampleValue(after, 'codexec_run_duration_seconds_bucket', { ...durations, le: '+Inf' })).toBe(
      sampleValue(after, 'codexec_run_duration_seconds_count', durations),
    );
    const pool =
      sampleValue(after, 'codexec_warm_pool_runs_total', { result: 'hit' }) +
      sampleValue(after, 'codexec_warm_pool_runs_total', { result: 'miss' });
    expect(pool).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('labels a run that timed out, and one that failed, by their outcome', async () => {
    const labels = (outcome: string) => ({ tool: 'execute_code', language: 'python', outcome });
    const before = await scrape(server.url, TOKEN);
    const slow = await callTool<{ timed_out: boolean }>(client, 'execute_code', {
      language: 'python',
      code: 'import time\ntime.sleep(30)',
      timeout_ms: 500,
    });
    expect(slow.value.timed_out).toBe(true);
    const failing = await callTool(client, 'execute_code', {
      language: 'python',
      code: 'raise SystemExit(3)',
    });
    expect(failing.value.exit_code).toBe(3);
    const after = await scrape(server.url, TOKEN);
    for (const outcome of ['timeout', 'error']) {
      const moved =
        sampleValue(after, 'codexec_runs_total', labels(outcome)) -
        sampleValue(before, 'codexec_runs_total', labels(outcome));
      expect(moved, outcome).toBe(1);
    }
    expect(sampleValue(after, 'codexec_runs_total', labels('ok'))).toBe(
      sampleValue(before, 'codexec_runs_total', labels('ok')),
    );
  }, 60_000);

  it('labels a send whose code waits for input "waiting", not an error', async () => {
    const waiting = { tool: 'send_to_session', language: 'python', outcome: 'waiting' };
    const before = await scrape(server.url, TOKEN);
    const { value } = await callTool<{ session_id: string }>(client, 'start_session', { language: 'python' });
    const asked = await callTool<{ waiting_for_input?: boolean }>(client, 'send_to_session', {
      session_id: value.session_id,
      code: 'input("? ")',
    });
    expect(asked.value.waiting_for_input).toBe(true);
    const after = await scrape(server.url, TOKEN);
    expect(
      sampleValue(after, 'codexec_runs_total', waiting) - sampleValue(before, 'codexec_runs_total', waiting),
    ).toBe(1);
    const errors = { ...waiting, outcome: 'error' };
    expect(sampleValue(after, 'codexec_runs_total', errors)).toBe(
      sampleValue(before, 'codexec_runs_total', errors),
    );
    await callTool(client, 'kill_session', { session_id: value.session_id });
  }, 60_000);

  it('shows live sessions as a gauge', async () => {
    const started = await callTool<{ session_id: string }>(client, 'start_session', { language: 'bash' });
    expect(sampleValue(await scrape(server.url, TOKEN), 'codexec_sessions')).toBe(1);
    await callTool(client, 'close_session', { session_id: started.value.session_id });
    expect(sampleValue(await scrape(server.url, TOKEN), 'codexec_sessions')).toBe(0);
  }, 60_000);
});

describe('GET /metrics with CODEXEC_METRICS_PUBLIC=true', () => {
  it('answers without a token, while /mcp still wants one', async () => {
    const server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN, CODEXEC_METRICS_PUBLIC: 'true' } });
    try {
      const metrics = await scrape(server.url);
      expect(metrics.types.get('codexec_runs_total')).toBe('counter');
      const mcp = await fetch(new URL('/mcp', server.url), { method: 'POST', body: '{}' });
      expect(mcp.status).toBe(401);
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('GET /metrics: approvals', () => {
  it('counts forms asked (once per form, not per retry) and their answers', async () => {
    const server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN, CODEXEC_APPROVAL: 'ask' } });
    let decision = 'approve';
    const client = await connectHttp(server.url, TOKEN, 'modern', () => ({
      action: 'accept',
      content: { decision },
    }));
    try {
      const approved = await callTool(client, 'execute_code', { language: 'python', code: 'print(1)' });
      expect(approved.value.success).toBe(true);
      decision = 'deny';
      const denied = await callTool(client, 'execute_code', { language: 'python', code: 'print(2)' });
      expect(denied.value.code).toBe('APPROVAL_DENIED');
      const metrics = await scrape(server.url, TOKEN);
      expect(sampleValue(metrics, 'codexec_approvals_total', { result: 'asked' })).toBe(2);
      expect(sampleValue(metrics, 'codexec_approvals_total', { result: 'approved' })).toBe(1);
      expect(sampleValue(metrics, 'codexec_approvals_total', { result: 'denied' })).toBe(1);
      // The denied call ran nothing: one run counted.
      expect(sampleValue(metrics, 'codexec_runs_total', { tool: 'execute_code', outcome: 'ok' })).toBe(1);
    } finally {
      await client.close();
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
    }
  }, 60_000);
});
