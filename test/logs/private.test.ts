// The search index holds every principal's code and output. A root landlock server lends its runs'
// group search on its home, so a host process of that group could open a readable index by name:
// the index, its -wal and -shm files are the server user's alone, an earlier server's 0644 ones too.
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateDatabase } from '../../src/util/index.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const others = (path: string) => statSync(path).mode & 0o077;

describe('the search index is its owner’s alone', () => {
  let server: TestServer;
  const home = tempDir('codexec-private-index-');
  beforeAll(async () => {
    // What an earlier server left: an index file others could read.
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'index.db'), '', { mode: 0o644 });
    server = await startServer({ home });
  });
  afterAll(() => server.close());

  it('index.db, its -wal and -shm: no access for group or others, once the server has used them', async () => {
    await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo private-words' });
    const found = await callTool<{ total_count: number }>(server.client, 'search_execution_logs', {
      query: 'private-words',
    });
    expect(found.value.total_count).toBeGreaterThan(0);
    for (const name of ['index.db', 'index.db-wal', 'index.db-shm']) {
      const path = join(home, name);
      expect(existsSync(path), name).toBe(true);
      expect(others(path), name).toBe(0);
    }
  });
});

describe('privateDatabase', () => {
  it('creates the database 0600 and tightens an existing -wal, leaving an absent -shm absent', () => {
    const dir = tempDir('codexec-private-db-');
    const path = join(dir, 'some.db');
    writeFileSync(`${path}-wal`, '', { mode: 0o666 });
    privateDatabase(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}-shm`)).toBe(false);
  });
});
