// An exposed port (start_process expose_port) in sandbox mode docker, under each runtime of
// RUNTIMES: the forwarder runs in the container (the image's python), on a socket in the
// bind-mounted workspace that the server reaches from the host.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/eventually.js';
import { connectHttp, type HttpServer, startHttp } from '../../helpers/http.js';
import { callTool, tempDir } from '../../helpers/server.js';
import { ensureImage, RUNTIMES } from './engine.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

beforeAll(() => ensureImage(), 600_000);

for (const runtime of RUNTIMES)
  describe.skipIf(runtime.missing)(`an exposed port in docker mode (${runtime.name})`, () => {
    let server: HttpServer;
    afterAll(() => server?.stop());

    it('serves a python session’s server to its principal only', async () => {
      const dir = tempDir();
      const tokens = join(dir, 'tokens.json');
      writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
      server = await startHttp({ env: { ...runtime.env, CODEXEC_HTTP_TOKENS: tokens } });
      const alice = await connectHttp(server.url, ALICE, 'modern');
      try {
        const session = (
          await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' })
        ).value.session_id;
        const started = await callTool<{ url: string }>(alice, 'start_process', {
          session_id: session,
          command:
            'mkdir -p site && echo from a container > site/index.html && python3 -m http.server 8000 --bind 127.0.0.1 --directory site',
          expose_port: 8000,
        });
        const get = async (token: string) => {
          const response = await fetch(`${started.value.url}index.html`, {
            headers: { authorization: `Bearer ${token}` },
          });
          return { status: response.status, body: await response.text() };
        };
        expect(await eventually(async () => (await get(ALICE)).status === 200, 30_000)).toBe(true);
        expect(await get(ALICE)).toEqual({ status: 200, body: 'from a container\n' });
        expect((await get(BOB)).status).toBe(404);
      } finally {
        await alice.close();
      }
    }, 120_000);
  });
