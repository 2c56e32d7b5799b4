import { describe, expect, it } from 'vitest';
import { OutputCollector } from '../../src/engine/index.js';

const limits = { maxChars: 100, head: 40, tail: 30 };

describe('OutputCollector', () => {
  it('returns output within the limit whole', () => {
    const c = new OutputCollector(limits);
    c.push(Buffer.from('a'.repeat(60)));
    c.push(Buffer.from('b'.repeat(40)));
    expect(c.finish()).toEqual({ text: 'a'.repeat(60) + 'b'.repeat(40), truncated: false, totalChars: 100 });
  });

  it('keeps head and tail with the seed separator beyond the limit', () => {
    const c = new OutputCollector(limits);
    for (let i = 0; i < 1000; i++) c.push(Buffer.from(String(i % 10)));
    const out = c.finish();
    expect(out.truncated).toBe(true);
    expect(out.totalChars).toBe(1000);
    const expectedHead = Array.from({ length: 40 }, (_, i) => String(i % 10)).join('');
    const expectedTail = Array.from({ length: 30 }, (_, i) => String((970 + i) % 10)).join('');
    expect(out.text).toBe(`${expectedHead}\n[... truncated 930 characters ...]\n${expectedTail}`);
  });

  it('cuts at line ends and says under the mark how to read the rest, in bytes', () => {
    const hints: number[] = [];
    const c = new OutputCollector(limits);
    const pageHint = (offset: number) => {
      hints.push(offset);
      return `[read on from ${offset}]`;
    };
    c.saveTo({ write: () => {}, pageHint });
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i} é`);
    c.push(Buffer.from(`${lines.join('\n')}\n`));
    const out = c.finish();
    // 40 characters hold lines 0-3 whole (9 each with the line end) and cut line 4: it goes; the
    // last 30 begin at line 97's start, so the tail keeps 98 and 99 only (the é is 2 bytes).
    const head = `${lines.slice(0, 4).join('\n')}\n`;
    const tail = `${lines.slice(98).join('\n')}\n`;
    expect(hints).toEqual([Buffer.byteLength(head)]);
    const omitted = out.totalChars - head.length - tail.length;
    expect(out.text).toBe(
      `${head}[... truncated ${omitted} characters ...]\n[read on from ${hints[0]}]\n${tail}`,
    );
  });

  it('never splits a multi-byte character across chunks', () => {
    const c = new OutputCollector(limits);
    const euro = Buffer.from('€');
    c.push(euro.subarray(0, 1));
    c.push(euro.subarray(1));
    expect(c.finish().text).toBe('€');
  });

  it('keeps memory bounded for a large stream', () => {
    const c = new OutputCollector({ maxChars: 1000, head: 400, tail: 400 });
    const chunk = Buffer.alloc(65536, 'z');
    for (let i = 0; i < 2000; i++) c.push(chunk); // ~131 MB
    const out = c.finish();
    expect(out.text.length).toBeLessThan(1000);
    expect(out.totalChars).toBe(65536 * 2000);
  });
});
