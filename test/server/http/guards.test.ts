// serve --http's Host and Origin guards (against DNS rebinding), with raw requests: a Host that is empty or not
// name[:port] is a bad request (400 with a sentence, never 500); on a loopback bind a page's own
// loopback origin may call, a rebinding page (foreign Host or Origin) still gets 403.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, RAW_PING, rawHttp, startHttp } from '../../helpers/http.js';

let server: HttpServer;
let port: string;
beforeAll(async () => {
  server = await startHttp({
    args: ['--no-auth'],
    env: { CODEXEC_HTTP_ALLOWED_ORIGINS: 'https://dash.example.com' },
  });
  port = new URL(server.url).port;
});
afterAll(async () => {
  await server.stop();
  rmSync(server.home, { recursive: true, force: true });
});

const ping = (...headers: string[]) => rawHttp(server.url, [...RAW_PING.head, ...headers], RAW_PING.body);

describe('serve --http: the Host header', () => {
  it('an empty, missing or malformed Host gets 400 naming the header, on /mcp and elsewhere', async () => {
    const hosts = [
      'host: ',
      'host: a b',
      'host: [::1',
      `host: 127.0.0.1:${port}/x`,
      'host: user@127.0.0.1',
      'host: 127.0.0.1:99999',
      undefined, // no Host at all
    ];
    for (const host of hosts) {
      const response = await ping(...(host === undefined ? [] : [host]));
      expect(response.status, host).toBe(400);
      expect(response.body, host).toContain('Host header');
      expect(response.body, host).toContain('expected name[:port]');
    }
    const health = await rawHttp(server.url, ['GET /healthz HTTP/1.1', 'host: a b']);
    expect(health.status).toBe(400);
    // The server serves on after every one of them.
    expect((await ping(`host: 127.0.0.1:${port}`)).status).toBe(200);
  });

  it('a well-formed Host that names no loopback on a loopback bind stays 403 (DNS rebinding)', async () => {
    const response = await ping(`host: evil.example:${port}`);
    expect(response.status).toBe(403);
    expect(response.body).toContain('not a loopback name');
  });
});

describe('serve --http on a loopback bind: same-origin loopback pages may call', () => {
  it("allows this server's own origin under any loopback name, with the port it listens on", async () => {
    for (const name of ['127.0.0.1', 'localhost', '[::1]']) {
      const response = await ping(`host: ${name}:${port}`, `origin: http://${name}:${port}`);
      expect(response.status, name).toBe(200);
      expect(response.body, name).toContain('"result":{}');
    }
  });

  it('refuses every other origin with 403 unless CODEXEC_HTTP_ALLOWED_ORIGINS lists it', async () => {
    const other = String((Number(port) % 60_000) + 1024);
    const refused = [
      `http://127.0.0.1:${other}`, // another local server's page
      `https://127.0.0.1:${port}`, // another scheme is another origin
      `http://evil.example:${port}`,
      `http://127.0.0.1:${port}/path`,
      'null',
    ];
    for (const origin of refused) {
      const response = await ping(`host: 127.0.0.1:${port}`, `origin: ${origin}`);
      expect(response.status, origin).toBe(403);
      expect(response.body, origin).toContain('CODEXEC_HTTP_ALLOWED_ORIGINS');
    }
    const listed = await ping(`host: 127.0.0.1:${port}`, 'origin: https://dash.example.com');
    expect(listed.status).toBe(200);
  });
});
