// The dashboard's run feed (src/server/feed.ts): output reaches it only inside a tracked run,
// watchers hear only what their principal may see, and memory stays bounded.
import { describe, expect, it } from 'vitest';
import { type FeedEvent, RunFeed } from '../../src/server/index.js';

const label = (code: string) => ({ tool: 'execute_code', language: 'bash', code, sessionId: null });
const facts = (exit: number) => () => ({ execution_id: `exec_${exit}`, exit_code: exit });
const say = (text: string) => RunFeed.currentOutput()?.('stdout', text);

describe('RunFeed', () => {
  it("tells a principal's watcher of its runs and their output, and an admin's of all", async () => {
    const feed = new RunFeed();
    const alice: FeedEvent[] = [];
    const admin: FeedEvent[] = [];
    feed.watch('alice', (event) => alice.push(event));
    feed.watch(undefined, (event) => admin.push(event));
    await feed.track(label('echo a'), 'alice', async () => say('from-alice\n'), facts(0));
    await feed.track(label('echo b'), 'bob', async () => say('from-bob\n'), facts(1));
    const texts = (events: FeedEvent[]) =>
      events.flatMap((event) => (event.type === 'output' ? [event.text] : []));
    expect(texts(alice)).toEqual(['from-alice\n']);
    expect(texts(admin)).toEqual(['from-alice\n', 'from-bob\n']);
    expect(feed.list('bob').map((run) => [run.principal, run.status, run.output])).toEqual([
      ['bob', 'failed', 'from-bob\n'],
    ]);
    expect(feed.list(undefined).map((run) => run.execution_id)).toEqual(['exec_1', 'exec_0']);
    expect(RunFeed.currentOutput()).toBeUndefined(); // outside a tracked run: nowhere to go
  });

  it('keeps the last 100 finished runs and a 16,000-character tail of each', async () => {
    const feed = new RunFeed();
    let release = () => {};
    const running = feed.track(
      label('sleep'),
      'alice',
      () => new Promise<void>((done) => (release = done)),
      facts(0),
    );
    for (let index = 0; index < 150; index++) {
      await feed.track(label(`run ${index}`), 'alice', async () => say('x'.repeat(50_000)), facts(0));
    }
    const runs = feed.list(undefined);
    expect(runs.length).toBeLessThanOrEqual(101);
    expect(runs.some((run) => run.status === 'running')).toBe(true); // a running one is never dropped
    expect(runs[0]?.code).toBe('run 149');
    expect(Math.max(...runs.map((run) => run.output.length))).toBe(16_000);
    release();
    await running;
  });

  it('marks a run that throws as failed, and passes the error on', async () => {
    const feed = new RunFeed();
    await expect(
      feed.track(label('boom'), 'alice', () => Promise.reject(new Error('boom')), facts(0)),
    ).rejects.toThrow('boom');
    expect(feed.list('alice')[0]).toMatchObject({ status: 'failed', outcome: 'failed', limit: null });
    expect(feed.list('alice')[0]?.ended_at).not.toBeNull();
  });

  it("gives each ended run its result's outcome (the metrics' outcomeOf); waiting for input is none", async () => {
    const feed = new RunFeed();
    const results = [
      { success: true, exit_code: 0 },
      { success: false, exit_code: 3 },
      { success: false, exit_code: null, timed_out: true },
      { success: false, exit_code: null, cancelled: true },
      { success: false, exit_code: 137, limit: 'memory' },
      { success: false, exit_code: null, waiting_for_input: true },
    ];
    for (const result of results) {
      await feed.track(
        label('run'),
        'alice',
        async () => result,
        (ran) => ({
          execution_id: null,
          exit_code: ran.exit_code,
        }),
      );
    }
    expect(
      feed
        .list('alice')
        .reverse()
        .map((run) => [run.outcome, run.limit, run.status]),
    ).toEqual([
      ['ok', null, 'done'],
      ['error', null, 'failed'],
      ['timeout', null, 'failed'],
      ['cancelled', null, 'failed'],
      ['limit', 'memory', 'failed'],
      ['waiting', null, 'done'],
    ]);
  });
});
