// Every sh block of docs/ that runs curl, run as written against a real `serve --http`: a newcomer
// who copies one gets a result, not an error. A block's `# → …` lines say what it answers; the
// test checks the answer is a result carrying the `42` the examples print.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../helpers/http.js';

const TOKEN = 'docs-curl-token-0123456789';
const DOCS = new URL('../../docs/', import.meta.url);

/** Each doc's sh blocks that call curl, by file. */
const blocks = readdirSync(DOCS)
  .filter((name) => name.endsWith('.md'))
  .flatMap((name) =>
    [...readFileSync(new URL(name, DOCS), 'utf8').matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((match) => match[1] as string)
      .filter((block) => /^curl /m.test(block))
      .map((block, index) => ({ name: `${name} #${index + 1}`, block })),
  );

describe('the curl examples of docs/', () => {
  let server: HttpServer;
  beforeAll(async () => {
    server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await server.stop();
    rmSync(server.home, { recursive: true, force: true });
  });

  it('exist (http.md shows one per protocol era)', () => {
    expect(blocks.filter((each) => each.name.startsWith('http.md')).length).toBeGreaterThanOrEqual(2);
  });

  it.each(blocks)('$name runs as written and answers a result', ({ block }) => {
    const out = execFileSync('bash', ['-euo', 'pipefail', '-c', block], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', CODEXEC_URL: server.url, TOKEN },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const json = out.replace(/^event: message\ndata: /, '');
    const answer = JSON.parse(json) as { result?: { structuredContent?: { stdout?: string } } };
    expect(answer.result?.structuredContent?.stdout, out).toBe('42\n');
  });
});
