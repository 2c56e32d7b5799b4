// util/bounded: a size is enforced on the bytes read, never on a stat taken before the read.
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readUpTo } from '../../src/util/index.js';
import { tempDir } from '../helpers/server.js';

const dir = tempDir('codexec-bounded-');

async function readPath(path: string, limit: number) {
  const handle = await open(path, 'r');
  try {
    return await readUpTo(handle, limit);
  } finally {
    await handle.close();
  }
}

describe('readUpTo', () => {
  it('reads a file whole up to the limit, and says when there was more', async () => {
    const path = join(dir, 'exact');
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
    writeFileSync(path, bytes);
    const whole = await readPath(path, bytes.length);
    expect(whole.over).toBe(false);
    expect(whole.data.equals(bytes)).toBe(true);
    const cut = await readPath(path, bytes.length - 1);
    expect(cut.over).toBe(true);
    expect(cut.data.equals(bytes.subarray(0, bytes.length - 1))).toBe(true);
    const empty = join(dir, 'empty');
    writeFileSync(empty, '');
    expect(await readPath(empty, 10)).toEqual({ data: Buffer.alloc(0), over: false });
  });

  it('bounds a file that grew after it was opened and stat', async () => {
    const path = join(dir, 'grows');
    writeFileSync(path, 'small');
    const handle = await open(path, 'r');
    try {
      expect((await handle.stat()).size).toBe(5);
      appendFileSync(path, Buffer.alloc(8 * 1024 * 1024, 0x61));
      const read = await readUpTo(handle, 1000);
      expect(read.over).toBe(true);
      expect(read.data.length).toBe(1000);
      expect(read.data.subarray(0, 5).toString()).toBe('small');
    } finally {
      await handle.close();
    }
  });

  it('bounds a file that never ends', async () => {
    const read = await readPath('/dev/zero', 100_000);
    expect(read).toEqual({ data: Buffer.alloc(100_000), over: true });
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));
