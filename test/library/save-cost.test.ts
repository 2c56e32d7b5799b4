// A save costs the same whatever the library's size: measured without a clock, as the
// bytes the real server process reads and writes (/proc/<pid>/io) and how often index.json is
// replaced, while 100 scripts are saved into a library of 400 made by an earlier version.
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const EXISTING = 400;
const SAVES = 100;

/** The library as earlier versions left it: folders plus an index.json of all their metadata. */
function writeLibrary(scripts: string, count: number): void {
  const all = [];
  for (let i = 0; i < count; i++) {
    const name = `existing-${String(i).padStart(4, '0')}`;
    const metadata = {
      script_id: `script_${String(i).padStart(12, '0')}`,
      name,
      description: `an existing script number ${i} that parses something and prints a summary`,
      language: 'python',
      tags: ['existing', `group-${i % 10}`],
      packages: [],
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      last_run_at: null,
      run_count: 0,
      last_run_success: null,
      source_execution_id: null,
      version: 1,
    };
    mkdirSync(join(scripts, name, 'versions'), { recursive: true });
    writeFileSync(join(scripts, name, 'script.py'), `print(${i})\n`);
    writeFileSync(join(scripts, name, 'metadata.json'), JSON.stringify(metadata, null, 2));
    all.push(metadata);
  }
  writeFileSync(join(scripts, 'index.json'), JSON.stringify({ version: 1, scripts: all }, null, 2));
}

function io(pid: number): { read: number; written: number } {
  const fields = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(': ') as [string, string]),
  );
  return { read: Number(fields.rchar), written: Number(fields.wchar) };
}

describe.runIf(process.platform === 'linux')('save_script in a large library', () => {
  const home = tempDir();
  let server: TestServer;

  beforeAll(async () => {
    writeLibrary(join(home, 'scripts'), EXISTING);
    server = await startServer({ home, env: { CODEXEC_POOL_SIZE: '0' } });
  });
  afterAll(async () => {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('reads and writes a bounded amount per save, and replaces index.json only now and then', async () => {
    const listed = await callTool<{ total_count: number }>(server.client, 'list_scripts', {});
    expect(listed.value.total_count).toBe(EXISTING);
    const index = join(home, 'scripts', 'index.json');
    const indexBytes = statSync(index).size;
    expect(indexBytes).toBeGreaterThan(150_000); // what one full rewrite of the index would cost

    const stamp = () => {
      const s = statSync(index, { bigint: true });
      return `${s.ino}:${s.mtimeNs}`;
    };
    let rewrites = 0;
    const before = io(server.pid);
    for (let i = 0; i < SAVES; i++) {
      const was = stamp();
      const saved = await callTool<{ success: boolean }>(server.client, 'save_script', {
        name: `new-${i}`,
        description: `a new script number ${i}`,
        language: 'python',
        code: `print("new ${i}")`,
        tags: ['new'],
      });
      expect(saved.value.success).toBe(true);
      if (stamp() !== was) rewrites++;
    }
    const after = io(server.pid);
    const perSave = {
      read: (after.read - before.read) / SAVES,
      written: (after.written - before.written) / SAVES,
    };
    // Rewriting index.json on each save (or reading every script's metadata) costs > 150 KB a
    // save here; a save of its own folder costs a few KB, index.json's share (1/16 of it per
    // change, with a library of 400) a few more.
    expect(perSave.written, JSON.stringify(perSave)).toBeLessThan(32 * 1024);
    expect(perSave.read, JSON.stringify(perSave)).toBeLessThan(32 * 1024);
    expect(rewrites).toBeLessThanOrEqual(Math.ceil(SAVES / (EXISTING / 16)) + 1);

    // The listing still has everything, and index.json agrees with it once listed.
    const all = await callTool<{ total_count: number }>(server.client, 'list_scripts', {});
    expect(all.value.total_count).toBe(EXISTING + SAVES);
    const written = JSON.parse(readFileSync(index, 'utf8')) as { scripts: unknown[] };
    expect(written.scripts).toHaveLength(EXISTING + SAVES);
  }, 120_000);
});
