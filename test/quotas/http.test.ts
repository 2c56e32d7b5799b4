// CODEXEC_QUOTAS over HTTP: each bearer token is a principal; `*` covers those without an entry,
// an own entry replaces only the fields it names, and one principal's use never counts for another.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';
import { type QuotaRefusal, quotasFile, removeQuotaFiles, roomInMinute } from './helpers.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef01';

describe('CODEXEC_QUOTAS per principal over HTTP', () => {
  let server: HttpServer;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    const quotas = quotasFile({
      '*': { runs_per_minute: 1, max_sessions: 1 },
      alice: { runs_per_minute: 3 },
    });
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_QUOTAS: quotas } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    removeQuotaFiles();
  });

  const run = (client: Client, text: string) =>
    callTool<QuotaRefusal & { stdout?: string }>(client, 'execute_code', {
      language: 'bash',
      code: `echo ${text}`,
    });

  it("alice's own runs_per_minute, bob's from `*`; neither's use counts for the other", async () => {
    const alice = await connectHttp(server.url, ALICE, 'modern');
    const bob = await connectHttp(server.url, BOB, 'legacy');
    await roomInMinute(20_000);
    // Alice first spends her three: bob's one is untouched.
    for (const n of [1, 2, 3]) expect((await run(alice, `a${n}`)).value.stdout).toBe(`a${n}\n`);
    const aliceOver = await run(alice, 'a4');
    expect(aliceOver.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'runs_per_minute' });
    expect(aliceOver.value.error).toContain('runs_per_minute=3');
    expect((await run(bob, 'b1')).value.stdout).toBe('b1\n');
    const bobOver = await run(bob, 'b2');
    expect(bobOver.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'runs_per_minute' });
    expect(bobOver.value.error).toContain('runs_per_minute=1');
    expect(bobOver.value.retry_after_ms).toBeGreaterThan(0);
    expect(bobOver.value.retry_after_ms).toBeLessThanOrEqual(60_000);
  });

  it("alice's entry names no max_sessions: `*`'s 1 still applies to her, and to bob apart", async () => {
    const alice = await connectHttp(server.url, ALICE, 'legacy');
    const bob = await connectHttp(server.url, BOB, 'modern');
    const start = (client: Client) =>
      callTool<QuotaRefusal & { session_id: string }>(client, 'start_session', { language: 'bash' });
    const mine = await start(alice);
    expect(mine.isError).toBe(false);
    const over = await start(alice);
    expect(over.value).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      limit: 'max_sessions',
      setting: 'CODEXEC_QUOTAS',
    });
    // Alice's open session is hers alone: bob starts his own.
    const his = await start(bob);
    expect(his.isError).toBe(false);
    expect((await start(bob)).value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'max_sessions' });
  });
});
