// What serve --http says on stderr whatever LOG_LEVEL: where `--port 0` is listening.
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startHttp } from '../helpers/http.js';

describe('serve --http at LOG_LEVEL=warn', () => {
  it('still says where it listens, and no other info line', async () => {
    // startHttp waits for the "listening on" line: it resolves only if the line was said.
    const server = await startHttp({
      env: { CODEXEC_HTTP_TOKEN: 'announce-token-0123456789', LOG_LEVEL: 'warn' },
    });
    try {
      const infos = server
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('codexec info:'));
      expect(infos).toEqual([`codexec info: codexec listening on ${server.url}`]);
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
    }
  });
});
