// One principal's request bodies held in memory at once are bounded (CODEXEC_HTTP_MAX_INFLIGHT_BYTES):
// alice holds two large bodies open, not yet ended; her next request is refused 429 naming the
// setting, while bob's goes on. Loopback only; every socket is closed at the end.
import { writeFileSync } from 'node:fs';
import { type ClientRequest, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../../helpers/http.js';
import { tempDir } from '../../helpers/server.js';

const ALICE = 'alice-inflight-0123456789';
const BOB = 'bob-inflight-0123456789ab';
const PING = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });

describe('serve --http: request bytes in flight per principal', () => {
  let server: HttpServer;
  const held: ClientRequest[] = [];
  beforeAll(async () => {
    const dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({
      env: {
        CODEXEC_HTTP_TOKENS: tokens,
        CODEXEC_HTTP_MAX_BODY_BYTES: '65536',
        CODEXEC_HTTP_MAX_INFLIGHT_BYTES: '100000',
      },
    });
  });
  afterAll(async () => {
    for (const req of held) req.destroy();
    await server?.stop();
  });

  const headers = (token: string, length: number) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'content-length': String(length),
  });

  /** A POST whose body is only partly sent, and held open. */
  const hold = (token: string) => {
    const req = request(server.url, { method: 'POST', headers: headers(token, 60_000) });
    req.on('error', () => {});
    req.write(Buffer.alloc(50_000, 0x20));
    held.push(req);
  };

  const post = (token: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        server.url,
        { method: 'POST', headers: headers(token, Buffer.byteLength(PING)) },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(PING);
    });

  it("refuses a principal's request past its bound, and not another principal's", async () => {
    hold(ALICE);
    hold(ALICE);
    // Until the server has read both held bodies, a request of hers may still get in: ask again.
    let refused: { status: number; body: string } | undefined;
    for (let tries = 0; tries < 50 && !refused; tries++) {
      const answer = await post(ALICE);
      if (answer.status === 429) refused = answer;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(refused?.body).toContain('CODEXEC_HTTP_MAX_INFLIGHT_BYTES');
    const bob = await post(BOB);
    expect(bob.status).not.toBe(429);
  });
});
