// Two processes opening the same new search index at the same instant (two servers started
// together on one CODEXEC_HOME) must both succeed: switching to WAL fails at once with
// SQLITE_BUSY while the other process holds the file, and is retried.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/server.js';

const dir = tempDir('codexec-open-race-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OPENS = 25;
const script = `
  const { openIndexDb } = await import(${JSON.stringify(resolve(import.meta.dirname, '../../dist/logs/sqlite/db.js'))});
  const [dir, startAt] = process.argv.slice(1);
  let failures = 0;
  for (let i = 0; i < ${OPENS}; i++) {
    while (Date.now() < Number(startAt) + i * 100); // both processes open index i together
    try { openIndexDb(dir + '/index-' + i + '.db', dir + '/logs').close(); }
    catch (error) { failures++; console.error(error.code, error.message); }
  }
  process.stdout.write(String(failures));`;

function opener(startAt: number): Promise<string> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir, String(startAt)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('close', () => done(out));
  });
}

describe('opening a new search index from two processes at once', () => {
  it('succeeds in both, every time', async () => {
    const startAt = Date.now() + 1500;
    expect(await Promise.all([opener(startAt), opener(startAt)])).toEqual(['0', '0']);
  });
});

describe('an opened search index', () => {
  // better-sqlite3 builds SQLite with a 16 MB page cache: a long-lived server's index filled it
  // slowly, which the load test's memory slope read as a leak for ~45,000 runs.
  it('keeps its page cache at SQLite’s own default of 2 MB', async () => {
    const { openIndexDb } = await import('../../src/logs/sqlite/db.js');
    const db = openIndexDb(join(dir, 'cache.db'), join(dir, 'logs'));
    try {
      expect(db.pragma('cache_size', { simple: true })).toBe(-2000);
    } finally {
      db.close();
    }
  });
});
