// The saved-output store without a server: the collector hands the sink the whole stream only
// once it outgrows the cap; the sink caps the file at a character's end; slices never split a
// character and add up to the file; a principal's total is trimmed oldest first.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OutputCollector } from '../../src/engine/index.js';
import { characterEnd, SavedOutputs, sliceText } from '../../src/outputs/index.js';
import { SecretsFilter } from '../../src/policy/index.js';
import { principalFolder } from '../../src/util/index.js';
import { tempDir } from '../helpers/server.js';

const ID = 'exec_0123456789ab';
const homes: string[] = [];
function home(): string {
  const dir = tempDir();
  homes.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const fileOf = (root: string, stream = 'stdout') =>
  join(root, 'output', principalFolder('local'), `${ID}.${stream}`);

describe('OutputCollector with a sink', () => {
  const limits = { maxChars: 100, head: 40, tail: 30 };

  it('writes nothing while the output fits', () => {
    const store = new SavedOutputs(home(), 1000);
    const streams = store.streams('local', ID);
    const c = new OutputCollector(limits);
    c.saveTo(streams?.stdout as never);
    c.push(Buffer.from('a'.repeat(100)));
    expect(c.finish().truncated).toBe(false);
    expect(streams?.stdout.close()).toBeUndefined();
    expect(readdirSync(homes[0] as string)).toEqual([]);
  });

  it('gets everything, from the first character, once it does not', () => {
    const root = home();
    const streams = new SavedOutputs(root, 1_000_000).streams('local', ID);
    const c = new OutputCollector(limits, new SecretsFilter({ values: ['hunter2-secret'] }).stream());
    c.saveTo(streams?.stdout as never);
    let all = '';
    for (let i = 0; i < 50; i++) {
      const piece = i === 25 ? 'hunter2-' : i === 26 ? 'secret\n' : `line ${i} é\n`;
      all += piece;
      c.push(Buffer.from(piece));
    }
    const out = c.finish();
    expect(out.truncated).toBe(true);
    const saved = streams?.stdout.close();
    const expected = all.replace('hunter2-secret', '***');
    expect(saved).toEqual({
      bytes: Buffer.byteLength(expected),
      uri: `codexec://exec/${ID}/stdout`,
      partial: false,
    });
    expect(readFileSync(fileOf(root), 'utf8')).toBe(expected);
    expect(statSync(fileOf(root)).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'output')).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, 'output', principalFolder('local'))).mode & 0o777).toBe(0o700);
  });

  it('caps the file at a character boundary and says it is partial', () => {
    const root = home();
    const streams = new SavedOutputs(root, 10).streams('local', ID);
    streams?.stdout.write('abcdefghi€€'); // the first € would end at byte 12
    const saved = streams?.stdout.close();
    expect(saved?.bytes).toBe(9);
    expect(saved?.partial).toBe(true);
    expect(readFileSync(fileOf(root), 'utf8')).toBe('abcdefghi');
  });

  it('keeps nothing at 0', () => {
    expect(new SavedOutputs(home(), 0).streams('local', ID)).toBeUndefined();
  });
});

describe('slices', () => {
  const text = 'a€😀b\n'.repeat(50);
  const data = Buffer.from(text);

  it('characterEnd backs up to the start of a cut character', () => {
    expect(characterEnd(Buffer.from('a€'), 2)).toBe(1);
    expect(characterEnd(Buffer.from('a€'), 4)).toBe(4);
    expect(characterEnd(Buffer.from('a€'), 1)).toBe(1);
  });

  it('add up to the whole, for every slice length', () => {
    for (let length = 1; length <= 13; length++) {
      let out = '';
      let offset: number | null = 0;
      while (offset !== null) {
        const from = Math.max(0, offset - 3);
        const slice = sliceText(
          data.subarray(from, Math.min(data.length, offset + length + 7)),
          from,
          offset,
          length,
          data.length,
        );
        expect(slice.offset).toBe(offset);
        expect(slice.bytes).toBeGreaterThan(0);
        out += slice.text;
        offset = slice.next_offset;
      }
      expect(out).toBe(text);
    }
  });

  it('reads through the store, and says what is missing', async () => {
    const root = home();
    const store = new SavedOutputs(root, 1_000_000);
    const streams = store.streams('local', ID);
    streams?.stdout.write(text);
    streams?.stdout.close();
    const slice = await store.read('local', ID, 'stdout', 0, 5);
    expect(slice).toEqual({ total_bytes: data.length, offset: 0, next_offset: 4, bytes: 4, text: 'a€' });
    expect(await store.readAll('local', ID, 'stdout', data.length)).toBe(text);
    await expect(store.readAll('local', ID, 'stdout', 10)).rejects.toThrow(/page it with read_file/);
    await expect(store.read('bob', ID, 'stdout', 0, 5)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.read('local', 'exec_../../x', 'stdout', 0, 5)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await store.remove([{ executionId: ID, principal: 'local' }]);
    await expect(store.read('local', ID, 'stdout', 0, 5)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('a principal’s total', () => {
  it('is trimmed to 16 x the cap, oldest first', async () => {
    const root = home();
    const store = new SavedOutputs(root, 100);
    const dir = join(root, 'output', principalFolder('alice'));
    mkdirSync(dir, { recursive: true });
    const now = Date.now() / 1000;
    for (let i = 0; i < 20; i++) {
      const file = join(dir, `exec_${String(i).padStart(12, '0')}.stdout`);
      writeFileSync(file, 'x'.repeat(100));
      utimesSync(file, now - 1000 + i, now - 1000 + i);
    }
    // Another principal's files are not counted or touched.
    const other = join(root, 'output', principalFolder('bob'));
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, 'exec_000000000000.stdout'), 'y'.repeat(5000));
    await store.trim('alice', 100);
    const left = readdirSync(dir).sort();
    expect(left).toHaveLength(16);
    expect(left[0]).toBe('exec_000000000004.stdout');
    expect(readdirSync(other)).toHaveLength(1);
    // Within the count, no listing (a file added behind its back stays); past it, one.
    writeFileSync(join(dir, 'exec_100000000000.stdout'), 'x'.repeat(100));
    await store.trim('alice', 0);
    expect(readdirSync(dir)).toHaveLength(17);
    await store.trim('alice', 1);
    expect(readdirSync(dir)).toHaveLength(16);
    expect(readdirSync(dir).sort()[0]).toBe('exec_000000000005.stdout');
  });
});
