// Two stores on one directory stand for two servers sharing CODEXEC_SCRIPTS_DIR (two stdio clients
// on one CODEXEC_HOME): what one saves or runs, the other's next listing shows, though each keeps
// its list in memory and index.json lags.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DiskScriptStore } from '../../src/library/index.js';
import { tempDir } from '../helpers/server.js';

const limits = { maxVersions: 20, maxScriptBytes: 1_000_000 };
const input = (name: string, description: string) =>
  ({ name, description, language: 'bash', code: `echo ${name}`, tags: [], packages: [] }) as const;

describe('the list of scripts, shared by two servers', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('shows what the other saved, re-saved and ran since it last listed', async () => {
    dir = tempDir();
    const one = new DiskScriptStore(dir, limits);
    const two = new DiskScriptStore(dir, limits);
    for (let i = 0; i < 40; i++) await one.save(input(`s${i}`, `first ${i}`));
    expect(await two.list()).toHaveLength(40);
    await one.save(input('s7', 'second 7'));
    await one.recordRun('s8', true);
    await one.save(input('late', 'added'));
    const seen = await two.list();
    expect(seen).toHaveLength(41);
    expect(seen.find((s) => s.name === 's7')).toMatchObject({ description: 'second 7', version: 2 });
    expect(seen.find((s) => s.name === 's8')).toMatchObject({ run_count: 1, last_run_success: true });
  });

  it('a new server trusts index.json only where each metadata.json is the one it was read from', async () => {
    dir = tempDir();
    const one = new DiskScriptStore(dir, limits);
    for (let i = 0; i < 40; i++) await one.save(input(`s${i}`, `first ${i}`));
    await one.list(); // index.json now agrees with the folders
    // Changed behind index.json's back, as by a save cut short after its metadata was written.
    const path = join(dir, 's3', 'metadata.json');
    writeFileSync(path, readFileSync(path, 'utf8').replace('first 3', 'edited 3'));
    const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
    expect(index.scripts.find((s: { name: string }) => s.name === 's3').description).toBe('first 3');
    const fresh = new DiskScriptStore(dir, limits);
    expect((await fresh.list()).find((s) => s.name === 's3')?.description).toBe('edited 3');
  });
});
