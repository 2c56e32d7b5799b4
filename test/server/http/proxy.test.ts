// The hop between replicas (src/server/http/proxy.ts, forward.ts): the answer is piped as it comes
// (an SSE stream stays a stream), a refused connection is `unreachable` with nothing written, an
// owner dying mid-answer resets the client rather than end the body cleanly, a client going away
// cuts the upstream request, and only MCP's own headers go along (never the token).
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { passedHeaders } from '../../../src/server/http/forward.js';
import { type ProxyOutcome, proxy } from '../../../src/server/http/proxy.js';
import { freePort } from '../../helpers/postgres.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listen(handler: (res: ServerResponse, headers: Record<string, unknown>) => void) {
  const server = createServer((req, res) => {
    req.resume();
    req.once('end', () => handler(res, req.headers));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Answer {
  status: number;
  header?: unknown;
  chunks: Array<{ text: string; at: number }>;
  error?: string;
}

/**
 * A front server proxying every request to `target`; `client()` sends one request to it and
 * reports the chunks as they arrive, and how the proxy's call ended.
 */
async function front(target: string) {
  const outcomes: ProxyOutcome[] = [];
  const controller = new AbortController();
  const base = await listen(() => {});
  const server = servers.at(-1) as Server;
  server.removeAllListeners('request');
  server.on('request', (_req, res) => {
    const outgoing = {
      url: new URL(`${target}/mcp`),
      method: 'POST',
      headers: () => ({ 'content-type': 'application/json' }),
      body: Buffer.from('{}'),
    };
    void proxy(outgoing, res, controller.signal).then((outcome) => {
      outcomes.push(outcome);
      if (outcome === 'unreachable') res.end('local answer');
    });
  });
  const client = () =>
    new Promise<Answer>((resolve) => {
      const chunks: Array<{ text: string; at: number }> = [];
      const req = request(`${base}/mcp`, { method: 'POST' }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (text: string) => chunks.push({ text, at: Date.now() }));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, header: res.headers['mcp-x'], chunks }));
        res.on('error', (error) => resolve({ status: res.statusCode ?? 0, chunks, error: error.message }));
      });
      req.on('error', (error) => resolve({ status: 0, chunks, error: error.message }));
      req.end('{}');
    });
  return { client, outcomes, controller };
}

describe('proxy', () => {
  it('pipes an SSE answer chunk by chunk, its status and headers with it', async () => {
    let second = 0;
    const target = await listen((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-x': 'y' });
      res.write('data: one\n\n');
      setTimeout(() => {
        second = Date.now();
        res.end('data: two\n\n');
      }, 300);
    });
    const { client, outcomes } = await front(target);
    const answer = await client();
    expect(answer.status).toBe(200);
    expect(answer.header).toBe('y');
    expect(answer.chunks.map((c) => c.text).join('')).toBe('data: one\n\ndata: two\n\n');
    expect(answer.chunks[0]?.at).toBeLessThan(second);
    expect(outcomes).toEqual(['answered']);
  });

  it('is unreachable, having written nothing, when the connection is refused', async () => {
    const { client, outcomes } = await front(`http://127.0.0.1:${await freePort()}`);
    const answer = await client();
    expect(answer.chunks.map((c) => c.text).join('')).toBe('local answer');
    expect(outcomes).toEqual(['unreachable']);
  });

  it('resets the client when the other replica dies mid-answer', async () => {
    const target = await listen((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setTimeout(() => res.socket?.destroy(), 100);
    });
    const { client } = await front(target);
    const answer = await client();
    expect(answer.chunks.map((c) => c.text).join('')).toBe('data: one\n\n');
    expect(answer.error).toBeDefined();
  });

  it('cuts the upstream request when the client goes away', async () => {
    let closed = false;
    let streaming = false;
    const target = await listen((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      streaming = true;
      res.once('close', () => {
        closed = true;
      });
    });
    const { client, controller, outcomes } = await front(target);
    const pending = client();
    await expect.poll(() => streaming).toBe(true); // the stream is open when the client goes
    controller.abort();
    await pending;
    await expect.poll(() => closed).toBe(true);
    await expect.poll(() => outcomes).toEqual(['answered']);
  });

  it("passes MCP's headers along, never the token, cookies, Origin, replica claims or the MCP session", () => {
    const passed = passedHeaders({
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': '2026-07-28',
      'mcp-session-id': 'abc',
      'last-event-id': '7',
      authorization: 'Bearer secret',
      cookie: 'a=b',
      origin: 'http://evil.example',
      host: 'front:1',
      'x-codexec-replica-principal': 'bob',
    });
    expect(passed).toEqual({
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': '2026-07-28',
    });
  });
});
