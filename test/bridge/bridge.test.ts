// The bridge's resilience (src/bridge/), in process against a real downstream MCP server over
// stdio (test/fixtures/mcp/tools-server.mjs, which counts its starts and can be made to crash):
// the on-disk tool cache (a warm hit after a restart; stale tools served when the server is down)
// and the circuit breaker (open after failures in a row, refusing at once; half-open; closed).
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type BridgeRun, McpBridge } from '../../src/bridge/index.js';
import { tempDir } from '../helpers/server.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const bridges: McpBridge[] = [];
afterEach(async () => {
  for (const bridge of bridges.splice(0)) await bridge.close();
});

function setup() {
  const dir = tempDir();
  const starts = join(dir, 'starts');
  const crash = join(dir, 'crash');
  const specs = new Map([
    ['fx', { command: process.execPath, args: [FIXTURE], env: { STARTS_FILE: starts, CRASH_FILE: crash } }],
  ]);
  const open = (
    breaker?: { threshold: number; openMs: number },
    queue?: { running: number; waiting: number; waitMs: number },
  ) => {
    const bridge = new McpBridge(specs, {
      rateLimitPerMinute: 1000,
      cacheFile: join(dir, 'cache.json'),
      breaker,
      queue,
    });
    bridges.push(bridge);
    return bridge;
  };
  const run = (bridge: McpBridge): BridgeRun =>
    bridge.openRun({ allowedTools: ['*'], signal: new AbortController().signal });
  const startCount = () => (existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n').length : 0);
  return { dir, crash, open, run, startCount, cacheFile: join(dir, 'cache.json') };
}

describe('the tool cache on disk', () => {
  it('answers discovery after a restart without starting the server', async () => {
    const { open, run, startCount } = setup();
    expect((await run(open()).discover()).length).toBe(6);
    expect(startCount()).toBe(1);
    const restarted = open();
    expect((await run(restarted).discover()).map((tool) => tool.name)).toContain('mcp__fx__add');
    expect(startCount()).toBe(1);
    // The first call does connect.
    await run(restarted).call('mcp__fx__echo', { text: 'x' });
    expect(startCount()).toBe(2);
  }, 30_000);

  it('serves stale tools when the server cannot be reached, and lists again once it can', async () => {
    const { open, run, crash, cacheFile, startCount } = setup();
    await run(open()).discover();
    const cache = JSON.parse(readFileSync(cacheFile, 'utf8'));
    cache.fx.at = 0; // older than 24 h
    writeFileSync(cacheFile, JSON.stringify(cache));
    writeFileSync(crash, '');
    const down = open();
    expect((await run(down).discover()).length).toBe(6);
    expect(startCount()).toBe(2); // it tried
    rmSync(crash);
    expect((await run(down).discover()).length).toBe(6);
    expect(JSON.parse(readFileSync(cacheFile, 'utf8')).fx.at).toBeGreaterThan(0);
  }, 30_000);
});

describe('the circuit breaker', () => {
  it('opens after failures in a row, refuses at once, tries again half-open and closes', async () => {
    const { open, run, crash, startCount } = setup();
    const bridge = open({ threshold: 2, openMs: 600 });
    const calls = run(bridge);
    await calls.discover();
    writeFileSync(crash, '');
    await expect(calls.call('mcp__fx__crash', {})).rejects.toMatchObject({ code: 'DOWNSTREAM_ERROR' });
    await expect(calls.call('mcp__fx__echo', { text: 'x' })).rejects.toMatchObject({
      code: 'DOWNSTREAM_UNAVAILABLE',
    });
    expect(bridge.health()[0]?.circuit).toBe('open');
    const started = startCount();
    await expect(calls.call('mcp__fx__echo', { text: 'x' })).rejects.toMatchObject({
      code: 'CIRCUIT_OPEN',
      message: expect.stringContaining('circuit open'),
    });
    expect(startCount()).toBe(started); // refused without trying the server
    await expect.poll(() => bridge.health()[0]?.circuit, { timeout: 10_000, interval: 50 }).toBe('half-open');
    rmSync(crash);
    await expect(calls.call('mcp__fx__echo', { text: 'back' })).resolves.toMatchObject({
      content: [{ type: 'text', text: 'back' }],
    });
    expect(bridge.health()[0]?.circuit).toBe('closed');
    expect(calls.takeCalls()?.calls.map((call) => call.success)).toEqual([false, false, false, true]);
  }, 30_000);
});

describe('the call queue', () => {
  it('runs a bounded number of calls, queues a bounded number, and refuses the rest clearly', async () => {
    const { open, run } = setup();
    const calls = run(open(undefined, { running: 1, waiting: 1, waitMs: 5000 }));
    await calls.discover();
    const started = Date.now();
    const results = await Promise.allSettled([
      calls.call('mcp__fx__slow', { ms: 300 }),
      calls.call('mcp__fx__slow', { ms: 300 }),
      calls.call('mcp__fx__slow', { ms: 300 }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'QUEUE_FULL' });
    // One at a time: the queued call waited for the first.
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
  }, 30_000);

  it('gives up on a call that waits longer than its limit', async () => {
    const { open, run } = setup();
    const calls = run(open(undefined, { running: 1, waiting: 5, waitMs: 100 }));
    await calls.discover();
    const [first, second] = await Promise.allSettled([
      calls.call('mcp__fx__slow', { ms: 500 }),
      calls.call('mcp__fx__slow', { ms: 10 }),
    ]);
    expect(first.status).toBe('fulfilled');
    expect((second as PromiseRejectedResult).reason).toMatchObject({ code: 'QUEUE_TIMEOUT' });
  }, 30_000);
});
