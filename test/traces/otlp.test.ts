// Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, a span per tool call and
// its run's phases reach an OTLP/HTTP receiver (here a loopback one), from stdio and HTTP servers
// alike, flushed when the server stops.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsRunning } from '../helpers/health.js';
import { connectHttp, startHttp } from '../helpers/http.js';
import { callTool, startServer } from '../helpers/server.js';

interface OtlpSpan {
  readonly name: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly traceId: string;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: ReadonlyArray<{ key: string; value: { stringValue?: string } }>;
}

interface Received {
  readonly service: string | undefined;
  readonly span: OtlpSpan;
}

/** A loopback OTLP/HTTP receiver: every span of every POST /v1/traces (JSON encoding). */
class Receiver {
  readonly spans: Received[] = [];
  readonly paths: string[] = [];
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        resourceSpans: Array<{
          resource: { attributes: OtlpSpan['attributes'] };
          scopeSpans: Array<{ spans: OtlpSpan[] }>;
        }>;
      };
      for (const { resource, scopeSpans } of body.resourceSpans) {
        const service = resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const scope of scopeSpans) for (const span of scope.spans) this.spans.push({ service, span });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });

  async start(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function attribute(span: OtlpSpan, key: string): string | undefined {
  return span.attributes.find((a) => a.key === key)?.value.stringValue;
}

/** The tool call's span for `executionId`, and its children. */
function callSpans(receiver: Receiver, executionId: string) {
  const call = receiver.spans.find((r) => attribute(r.span, 'codexec.execution_id') === executionId);
  const children = receiver.spans.filter((r) => call && r.span.parentSpanId === call.span.spanId);
  return { call, children: children.map((r) => r.span) };
}

describe('traces over OTLP/HTTP', () => {
  const receiver = new Receiver();
  let endpoint: string;
  const otel = () => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'codexec-under-test',
  });

  beforeAll(async () => {
    endpoint = await receiver.start();
  });

  afterAll(() => receiver.close());

  it('stdio: a span per execute_code call, with its attributes, its approval wait and its run as children', async () => {
    const server = await startServer({
      env: { ...otel(), CODEXEC_APPROVAL: 'ask' },
      elicit: async () => {
        await new Promise((resolve) => setTimeout(resolve, 200)); // the user reads the form
        return { action: 'accept', content: { decision: 'approve' } };
      },
    });
    const run = await callTool<{ execution_id: string; sandbox_mode: string }>(
      server.client,
      'execute_code',
      {
        language: 'python',
        code: 'print(6 * 7)',
      },
    );
    await server.close(); // the batch is flushed at shutdown
    const { call, children } = callSpans(receiver, run.value.execution_id);
    expect(call, `${JSON.stringify(receiver.paths)} ${server.stderr()}`).toBeDefined();
    if (!call) return;
    expect(call.service).toBe('codexec-under-test');
    expect(call.span.name).toBe('tools/call execute_code');
    expect(call.span.parentSpanId ?? '').toBe('');
    expect(attribute(call.span, 'codexec.tool')).toBe('execute_code');
    expect(attribute(call.span, 'codexec.language')).toBe('python');
    expect(attribute(call.span, 'codexec.principal')).toBe('local');
    expect(attribute(call.span, 'codexec.outcome')).toBe('ok');
    expect(attribute(call.span, 'codexec.sandbox_mode')).toBe(run.value.sandbox_mode);
    expect(children.map((child) => child.name).sort()).toEqual(['approval wait', 'run']);
    const waited = children.find((child) => child.name === 'approval wait');
    const phase = children.find((child) => child.name === 'run');
    expect(phase?.traceId).toBe(call.span.traceId);
    const nanos = (value: string | undefined) => BigInt(value ?? 0);
    expect(nanos(waited?.endTimeUnixNano) - nanos(waited?.startTimeUnixNano)).toBeGreaterThanOrEqual(
      150_000_000n,
    );
    expect(nanos(waited?.startTimeUnixNano)).toBeGreaterThanOrEqual(nanos(call.span.startTimeUnixNano));
    expect(nanos(phase?.startTimeUnixNano)).toBeGreaterThanOrEqual(nanos(waited?.endTimeUnixNano));
    expect(nanos(phase?.endTimeUnixNano)).toBeLessThanOrEqual(nanos(call.span.endTimeUnixNano));
    expect(receiver.paths.every((path) => path.startsWith('POST /v1/traces application/json'))).toBe(true);
  }, 60_000);

  it('serve --http: the span names the principal, a timed-out run’s outcome, and a wait for a run slot', async () => {
    const token = 'traces-token-0123456789';
    const server = await startHttp({
      env: { ...otel(), CODEXEC_HTTP_TOKEN: token, CODEXEC_MAX_CONCURRENT_RUNS: '1' },
    });
    const client = await connectHttp(server.url, token, 'modern');
    const slow = callTool<{ execution_id: string }>(client, 'execute_code', {
      language: 'python',
      code: 'import time\ntime.sleep(30)',
      timeout_ms: 500,
    });
    expect(await runsRunning(client)).toBe(true); // the slow one holds the only slot
    const queued = await callTool<{ execution_id: string }>(client, 'execute_code', {
      language: 'python',
      code: 'print(1)',
    });
    const run = await slow;
    await client.close();
    await server.stop();
    const { call } = callSpans(receiver, run.value.execution_id);
    expect(call?.span.name).toBe('tools/call execute_code');
    expect(call && attribute(call.span, 'codexec.principal')).toBe('default');
    expect(call && attribute(call.span, 'codexec.outcome')).toBe('timeout');
    const waiting = callSpans(receiver, queued.value.execution_id);
    expect(waiting.call && attribute(waiting.call.span, 'codexec.outcome')).toBe('ok');
    expect(waiting.children.map((child) => child.name).sort()).toEqual(['run', 'slot wait']);
  }, 60_000);
});
