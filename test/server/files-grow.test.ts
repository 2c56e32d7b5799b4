// read_file and resources/read against a file that code keeps growing: a background process in
// the session truncates it and refills it without end, so a stat sees it small and it is large
// by the time it is read. No answer may carry more than CODEXEC_MAX_FILE_TRANSFER_BYTES.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

const LIMIT = 65_536;
const TRIES = 60;

/** Truncate, then append 16 × 64 KiB, forever: the file is under the limit only just after. */
const WRITER = [
  'python3 -c "',
  'import os',
  "chunk = b'a' * 65536",
  'while True:',
  "    fd = os.open('grow.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)",
  '    for _ in range(16): os.write(fd, chunk)',
  '    os.close(fd)',
  '"',
].join('\n');

interface ReadAnswer {
  success: boolean;
  bytes?: number;
  content?: string;
  code?: string;
  error?: string;
}

describe('a file growing while it is read', () => {
  let server: TestServer;
  let session: string;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_MAX_FILE_TRANSFER_BYTES: String(LIMIT) } });
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    session = started.value.session_id;
    const writer = await callTool<{ running: boolean }>(server.client, 'start_process', {
      session_id: session,
      command: WRITER,
    });
    expect(writer.value.running).toBe(true);
  });
  afterAll(() => server.close());

  const readFile = () =>
    callTool<ReadAnswer>(server.client, 'read_file', { session_id: session, path: 'grow.txt' });

  it(`never answers with more than the limit (${TRIES} read_file and resources/read each)`, async () => {
    // The writer is running once the file has been seen past the limit.
    const deadline = Date.now() + 30_000;
    while ((await readFile()).value.code !== 'LIMIT_REACHED')
      if (Date.now() > deadline) throw new Error('the writer never grew grow.txt past the limit');

    const outcomes = new Set<string>();
    for (let i = 0; i < TRIES; i++) {
      const read = await readFile();
      if (read.isError) {
        expect(read.value.code).toBe('LIMIT_REACHED');
        outcomes.add('refused');
      } else {
        expect(read.value.bytes).toBeLessThanOrEqual(LIMIT);
        expect(Buffer.byteLength(read.value.content ?? '')).toBeLessThanOrEqual(LIMIT);
        outcomes.add('read');
      }
      try {
        const resource = await server.client.readResource({
          uri: `codexec://session/${session}/grow.txt`,
        });
        const [content] = resource.contents as Array<{ text?: string; blob?: string }>;
        const bytes =
          content?.text !== undefined
            ? Buffer.byteLength(content.text)
            : Buffer.from(content?.blob ?? '', 'base64').length;
        expect(bytes).toBeLessThanOrEqual(LIMIT);
      } catch (error) {
        expect(String(error)).toMatch(/limit is 65536/);
      }
    }
    expect(outcomes.has('refused')).toBe(true);
  });
});
