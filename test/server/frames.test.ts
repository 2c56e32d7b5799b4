// The pure frame logic: splitting with bounded memory, and the JSON-RPC answer to each shape.
import { describe, expect, it } from 'vitest';
import {
  classifyOversize,
  classifyText,
  classifyValue,
  type Frame,
  LineSplitter,
  type Verdict,
} from '../../src/server/transport/index.js';

const text = (frame: Frame | undefined) => (frame?.kind === 'line' ? frame.bytes.toString() : frame);
const replyOf = (verdict: Verdict) => {
  if (verdict.kind !== 'reply') throw new Error(`expected a reply, got ${JSON.stringify(verdict)}`);
  expect(verdict.replies).toHaveLength(1);
  return verdict.replies[0];
};

describe('LineSplitter', () => {
  it('splits lines across chunk boundaries and strips a trailing CR', () => {
    const s = new LineSplitter(100);
    expect(s.push(Buffer.from('{"a":'))).toEqual([]);
    const frames = s.push(Buffer.from('1}\r\n{"b":2}\n\n{"c"'));
    expect(frames.map(text)).toEqual(['{"a":1}', '{"b":2}', '']);
    expect(s.push(Buffer.from(':3}\n')).map(text)).toEqual(['{"c":3}']);
  });

  it('keeps a line of exactly the limit whole, and only the ends of a longer one', () => {
    const s = new LineSplitter(10, 4);
    expect(s.push(Buffer.from('0123456789\n')).map(text)).toEqual(['0123456789']);
    const [frame] = s.push(Buffer.from('0123456789A\n'));
    expect(frame).toMatchObject({ kind: 'oversize', bytes: 11 });
    if (frame?.kind !== 'oversize') throw new Error('not oversize');
    expect([frame.head.toString(), frame.tail.toString()]).toEqual(['0123', '789A']);
  });

  it('keeps the same ends however the line is chunked', () => {
    const line = Array.from({ length: 3000 }, (_, i) => String.fromCharCode(33 + (i % 90))).join('');
    for (const size of [1, 3, 7, 16, 17, 100, 3000]) {
      const s = new LineSplitter(50, 16);
      const frames: Frame[] = [];
      for (let i = 0; i < line.length; i += size)
        frames.push(...s.push(Buffer.from(line.slice(i, i + size))));
      frames.push(...s.push(Buffer.from('\n')));
      expect(frames).toHaveLength(1);
      if (frames[0]?.kind !== 'oversize') throw new Error('not oversize');
      expect([frames[0].head.toString(), frames[0].tail.toString(), frames[0].bytes]).toEqual([
        line.slice(0, 16),
        line.slice(-16),
        3000,
      ]);
    }
  });

  it('holds only the two windows while a huge line streams in, then recovers', () => {
    const s = new LineSplitter(1000, 16);
    let peak = 0;
    s.push(Buffer.from('HEAD-'));
    for (let i = 0; i < 10_000; i++) {
      expect(s.push(Buffer.alloc(1000, 'x'))).toEqual([]);
      peak = Math.max(peak, s.heldBytes);
    }
    const frames = s.push(Buffer.from('-TAIL\r\n{"next":1}\n'));
    expect(peak).toBeLessThanOrEqual(32);
    expect(frames[0]).toMatchObject({ kind: 'oversize', bytes: 10_000_010 });
    if (frames[0]?.kind !== 'oversize') throw new Error('not oversize');
    expect(frames[0].head.toString()).toBe(`HEAD-${'x'.repeat(11)}`);
    expect(frames[0].tail.toString()).toBe(`${'x'.repeat(10)}-TAIL`); // 16 bytes, less the CR
    expect(text(frames[1])).toBe('{"next":1}');
  });
});

describe('classifyText', () => {
  it('passes valid requests, notifications and responses on untouched', () => {
    for (const message of [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'x', arguments: {} } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 7, result: {} },
      { jsonrpc: '2.0', id: 7, error: { code: 1, message: 'no' } },
    ]) {
      expect(classifyText(JSON.stringify(message))).toEqual({ kind: 'deliver', message });
    }
  });

  it('ignores blank lines', () => {
    expect(classifyText('  \t')).toEqual({ kind: 'ignore' });
  });

  it('answers text that is not JSON, NUL bytes included, with -32700 and id null', () => {
    for (const line of ['not json', '{"jsonrpc":"2.0","id":1,', '\u0000', '{"a":"\u0000"}']) {
      expect(replyOf(classifyText(line))).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700 },
      });
    }
  });

  it('refuses a request whose params are not an object with -32602 and its id', () => {
    const line = '{"jsonrpc":"2.0","id":"p1","method":"tools/call","params":"not-an-object"}';
    expect(replyOf(classifyText(line))).toMatchObject({ id: 'p1', error: { code: -32602 } });
  });

  it.each([
    ['wrong jsonrpc', { jsonrpc: '1.0', id: 'r', method: 'ping' }, 'r', -32600],
    ['no method', { jsonrpc: '2.0', id: 'r' }, 'r', -32600],
    ['method not a string', { jsonrpc: '2.0', id: 'r', method: 5 }, 'r', -32600],
    ['unknown member', { jsonrpc: '2.0', id: 'r', method: 'ping', extra: 1 }, 'r', -32600],
    ['method and result', { jsonrpc: '2.0', id: 'r', method: 'ping', result: {} }, 'r', -32600],
    ['object id', { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, null, -32600],
    ['null id', { jsonrpc: '2.0', id: null, method: 'ping' }, null, -32600],
    ['fractional id', { jsonrpc: '2.0', id: 1.5, method: 'ping' }, 1.5, -32600],
    ['unsafe integer id', { jsonrpc: '2.0', id: 1e300, method: 'ping' }, 1e300, -32600],
    ['params an array', { jsonrpc: '2.0', id: 3, method: 'ping', params: [1] }, 3, -32602],
    ['params null', { jsonrpc: '2.0', id: 3, method: 'ping', params: null }, 3, -32602],
    [
      'bad _meta',
      { jsonrpc: '2.0', id: 3, method: 'ping', params: { _meta: { progressToken: {} } } },
      3,
      -32602,
    ],
  ])('refuses a request with %s, by its id when readable', (_, message, id, code) => {
    expect(replyOf(classifyText(JSON.stringify(message)))).toMatchObject({ id, error: { code } });
  });

  it('answers values that are not objects with -32600 and id null', () => {
    for (const line of ['1', '"x"', 'null', 'true', '[]']) {
      expect(replyOf(classifyText(line))).toMatchObject({ id: null, error: { code: -32600 } });
    }
  });

  it('refuses each request of a batch by its id and nothing else', () => {
    const batch = [
      { jsonrpc: '2.0', id: 'b1', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      5,
    ];
    const verdict = classifyText(JSON.stringify(batch));
    if (verdict.kind !== 'reply') throw new Error('expected replies');
    expect(verdict.replies.map((r) => [r.id, r.error.code])).toEqual([
      ['b1', -32600],
      [2, -32600],
    ]);
  });

  it('drops malformed notifications (never answered) with a reason for stderr', () => {
    const verdict = classifyText('{"jsonrpc":"2.0","method":"notifications/x","params":5}');
    expect(verdict).toMatchObject({ kind: 'drop', why: expect.stringContaining('notifications/x') });
  });

  it('turns a malformed response into an error for the server request it answers', () => {
    expect(classifyText('{"jsonrpc":"2.0","id":4,"result":"oops"}')).toMatchObject({
      kind: 'deliver',
      message: { jsonrpc: '2.0', id: 4, error: { code: -32600 } },
    });
    expect(classifyText('{"jsonrpc":"2.0","id":null,"result":{}}')).toMatchObject({ kind: 'drop' });
  });

  it('carries lone surrogates and escaped NULs through as data', () => {
    const line = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800\\u0000"}}';
    expect(classifyText(line)).toMatchObject({
      kind: 'deliver',
      message: { params: { name: '\ud800\u0000' } },
    });
  });

  it('survives deep nesting', () => {
    const deep = `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
    expect(['deliver', 'reply']).toContain(classifyText(deep).kind);
    expect(classifyValue(undefined)).toMatchObject({ kind: 'reply' });
  });
});

describe('classifyOversize', () => {
  const limit = 1000;
  const huge = 'x'.repeat(5000);
  const ends = (line: string) => [line.slice(0, 200), line.slice(-200)] as const;

  it('reads the id from the tail, where the SDK client writes it', () => {
    const line = JSON.stringify({ method: 'tools/call', params: { code: huge }, jsonrpc: '2.0', id: 42 });
    const [head, tail] = ends(line);
    expect(replyOf(classifyOversize(head, tail, line.length, limit))).toMatchObject({
      jsonrpc: '2.0',
      id: 42,
      error: { code: -32600, data: { bytes: line.length, limit } },
    });
  });

  it('reads the id from the head when it comes first', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 'abc', method: 'tools/call', params: { code: huge } });
    const [head, tail] = ends(line);
    expect(replyOf(classifyOversize(head, tail, line.length, limit))).toMatchObject({ id: 'abc' });
  });

  it('is not fooled by an "id" inside escaped string content or a nested object', () => {
    const tricky = JSON.stringify({ method: 'm', params: { code: `${huge}","id":666}`, x: { id: 7 } } });
    const [head, tail] = ends(tricky);
    expect(classifyOversize(head, tail, tricky.length, limit)).toMatchObject({ kind: 'drop' });
    const trailing = JSON.stringify({ method: 'm', params: { code: huge }, id: 'a\\"b' });
    expect(replyOf(classifyOversize(...ends(trailing), trailing.length, limit))).toMatchObject({
      id: 'a\\"b',
    });
  });

  it('drops a frame with no readable id, notifications included', () => {
    const notification = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/x', params: { huge } });
    expect(classifyOversize(...ends(notification), notification.length, limit)).toMatchObject({
      kind: 'drop',
      why: expect.stringContaining('no id'),
    });
    expect(classifyOversize('x'.repeat(200), 'y'.repeat(200), 9999, limit)).toMatchObject({ kind: 'drop' });
    // An id cut off by the end of the head could be a longer number: not read.
    expect(classifyOversize('{"id":12', '', 9999, limit)).toMatchObject({ kind: 'drop' });
  });

  it('fails the server request an oversize response answers', () => {
    const response = JSON.stringify({ jsonrpc: '2.0', id: 9, result: { content: huge } });
    expect(classifyOversize(...ends(response), response.length, limit)).toMatchObject({
      kind: 'deliver',
      message: { id: 9, error: { code: -32600 } },
    });
  });
});
