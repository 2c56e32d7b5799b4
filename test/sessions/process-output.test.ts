import { describe, expect, it } from 'vitest';
import { SecretsFilter } from '../../src/policy/index.js';
import { ProcessOutput } from '../../src/sessions/process-output.js';

describe('ProcessOutput', () => {
  it('pages by byte offset and keeps only the last bytes, saying what was dropped', () => {
    const output = new ProcessOutput(10);
    output.push(Buffer.from('0123456789'));
    expect(output.read(0, 100)).toEqual({
      output: '0123456789',
      offset: 0,
      next_offset: 10,
      dropped_bytes: 0,
      more: false,
    });
    output.push(Buffer.from('abcde'));
    expect(output.start).toBe(5);
    expect(output.read(0, 100)).toEqual({
      output: '56789abcde',
      offset: 5,
      next_offset: 15,
      dropped_bytes: 5,
      more: false,
    });
    expect(output.read(12, 2)).toEqual({
      output: 'cd',
      offset: 12,
      next_offset: 14,
      dropped_bytes: 0,
      more: true,
    });
    expect(output.read(99, 10)).toMatchObject({ output: '', offset: 15, next_offset: 15 });
  });

  it('never splits a character, whether dropped at the front or cut by a read', () => {
    const output = new ProcessOutput(5);
    const euro = Buffer.from('€€', 'utf8'); // 3 bytes each
    output.push(euro.subarray(0, 4)); // a character split between chunks
    output.push(euro.subarray(4));
    expect(output.end).toBe(6);
    const page = output.read(0, 100); // byte 0 dropped: the first whole character is the second €
    expect(page).toMatchObject({ output: '€', offset: 3, next_offset: 6 });
    expect(output.read(3, 2)).toMatchObject({ output: '€', next_offset: 6, more: false });
  });

  it('masks a secret split across chunks', () => {
    const secret = 'sk-ant-api03-0123456789abcdefghij0123456789';
    const output = new ProcessOutput(1 << 20, new SecretsFilter({ values: [] }).stream());
    output.push(Buffer.from(`key ${secret.slice(0, 12)}`));
    output.push(Buffer.from(`${secret.slice(12)} end\n`));
    output.finish();
    const { output: text } = output.read(0, 1 << 20);
    expect(text).not.toContain(secret);
    expect(text).toMatch(/^key .+ end\n$/);
  });
});
