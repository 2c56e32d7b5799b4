import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeldFiles } from '../../src/sandbox/host/held-files.js';

/** This process's user CPU time in clock ticks, from /proc/self/stat's text. */
const utime = (stat: string) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[11]);

describe('held files', () => {
  it('reads a seq file anew through the descriptor it keeps', () => {
    const files = new HeldFiles();
    try {
      const before = utime(files.read('/proc/thread-self/stat'));
      const until = performance.now() + 60;
      while (performance.now() < until); // ~60 ms of user time: 6 ticks at 100 Hz
      expect(utime(files.read('/proc/thread-self/stat'))).toBeGreaterThan(before);
    } finally {
      files.close();
    }
  });

  it('reads a file longer than one read whole, and fails for one that is not there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'held-files-'));
    const files = new HeldFiles();
    try {
      const long = 'x'.repeat(10_000);
      writeFileSync(join(dir, 'long'), long);
      expect(files.read(join(dir, 'long'))).toBe(long);
      expect(() => files.read(join(dir, 'absent'))).toThrow(/ENOENT/);
    } finally {
      files.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
