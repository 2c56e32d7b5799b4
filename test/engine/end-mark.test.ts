import { describe, expect, it } from 'vitest';
import { EndMarkFilter } from '../../src/engine/output.js';

const MARK = '\n[codexec-end 0123456789abcdef]';

function run(chunks: string[]): { out: string; seen: boolean } {
  const filter = new EndMarkFilter(Buffer.from(MARK));
  let out = '';
  for (const chunk of chunks) out += filter.push(Buffer.from(chunk)).toString();
  const seen = filter.seen;
  out += filter.end().toString();
  return { out, seen };
}

describe('EndMarkFilter', () => {
  it('takes the mark out, whole or split across chunks at any point', () => {
    const text = `hello\nworld${MARK}`;
    for (let cut = 0; cut <= text.length; cut++) {
      expect(run([text.slice(0, cut), text.slice(cut)])).toEqual({ out: 'hello\nworld', seen: true });
    }
    expect(run([...text])).toEqual({ out: 'hello\nworld', seen: true });
  });

  it('holds back only a tail that could start the mark (live output is not delayed)', () => {
    const filter = new EndMarkFilter(Buffer.from(MARK));
    expect(filter.push(Buffer.from('step 1')).toString()).toBe('step 1');
    expect(filter.push(Buffer.from('\nstep 2\n[codexec')).toString()).toBe('\nstep 2');
    expect(filter.push(Buffer.from(' nothing')).toString()).toBe('\n[codexec nothing');
  });

  it('passes on what follows the mark (a background process still writing)', () => {
    expect(run([`a${MARK}b`, 'c'])).toEqual({ out: 'abc', seen: true });
  });

  it('gives back what it held when the stream ends without the mark', () => {
    expect(run(['abc', MARK.slice(0, 10)])).toEqual({ out: `abc${MARK.slice(0, 10)}`, seen: false });
    expect(run([])).toEqual({ out: '', seen: false });
  });
});
