// The warm pool's size under load (src/pool/demand.ts): a fake start that takes a while, runs
// arriving at a rate, and what the pool holds ready or starting meanwhile.
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { WarmPool, WarmProcess } from '../../src/pool/index.js';
import type { SandboxedProcess } from '../../src/sandbox/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Fake starts: each process says it waits ("R") `startMs` after it was asked for. */
function fakeStarts(startMs: number, memoryMb = 8) {
  const state = { started: 0, discarded: 0, live: 0 };
  const start = async () => {
    state.started += 1;
    state.live += 1;
    const control = new PassThrough();
    let exit: () => void = () => {};
    const exited = new Promise<{ code: number; signal: null }>((resolve) => {
      exit = () => resolve({ code: 0, signal: null });
    });
    const proc = {
      control,
      exited,
      memoryMb: () => memoryMb,
      kill: () => exit(),
      dispose: async () => {},
    } as unknown as SandboxedProcess;
    const timer = setTimeout(() => control.write('R\n'), startMs);
    void exited.then(() => clearTimeout(timer));
    const warm = new WarmProcess(
      `exec_fake${state.started}`,
      `/nonexistent/codexec-fake-${state.started}`,
      proc,
    );
    const discard = warm.discard.bind(warm);
    warm.discard = async () => {
      state.discarded += 1;
      state.live -= 1;
      await discard();
    };
    return warm;
  };
  return { state, start };
}

/**
 * `runs` runs, one every `gapMs` (users who do not wait for each other), each taking a process,
 * waiting for its driver if it is still starting (as a run's job does), and giving it back
 * `runMs` later, as the engine does. What each run found (a process ready, one starting, none),
 * the most the pool held (ready or starting) as a run came, and its target as the last came.
 */
async function arrive(pool: WarmPool, runs: number, gapMs: number, runMs = 5) {
  const served: Array<'ready' | 'starting' | 'none'> = [];
  const running: Promise<void>[] = [];
  let mostHeld = 0;
  let target = 0;
  for (let i = 0; i < runs; i++) {
    mostHeld = Math.max(mostHeld, pool.readyCounts().python ?? 0);
    target = pool.target('python');
    const warm = pool.take('python');
    served.push(warm ? (warm.isReady ? 'ready' : 'starting') : 'none');
    running.push(
      (async () => {
        await warm?.ready;
        await sleep(runMs);
        await warm?.discard(); // the run is over: its process goes
        setImmediate(() => pool.replenish('python'));
      })(),
    );
    await sleep(gapMs);
  }
  await Promise.all(running);
  return { served, mostHeld, target };
}

const pools: WarmPool[] = [];
function newPool(
  options: Partial<ConstructorParameters<typeof WarmPool>[0]> &
    Pick<ConstructorParameters<typeof WarmPool>[0], 'start'>,
) {
  // Fake starts cost no CPU: as many at once as the rate asks for, unless a test says otherwise.
  const pool = new WarmPool({ size: 2, idleMs: 60_000, memoryMb: 1024, maxStarting: 16, ...options });
  pools.push(pool);
  return pool;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.shutdown()));
});

describe('warm pool sizing', () => {
  it('grows to cover starts slower than the gap between runs: every run then finds one ready', async () => {
    const { start } = fakeStarts(200);
    const pool = newPool({ start });
    const { served, mostHeld, target } = await arrive(pool, 40, 40);
    // 200 ms starts, a run every 40 ms: ceil(200 / 40) + 1 = 6 ready or starting.
    expect(target).toBeGreaterThanOrEqual(5);
    expect(target).toBeLessThanOrEqual(8);
    // Once the arrival rate and the start time are known (a few starts), runs wait for none (one
    // may, where a busy machine's timers fire late: a pool of two leaves nearly all waiting).
    const late = served.slice(20).filter((found) => found !== 'ready');
    expect(late.length, served.join(' ')).toBeLessThanOrEqual(1);
    expect(mostHeld).toBeGreaterThanOrEqual(4);
    expect(mostHeld).toBeLessThanOrEqual(8);
  });

  it('stays at CODEXEC_POOL_SIZE where starts are fast against the gap', async () => {
    const { start } = fakeStarts(5);
    const pool = newPool({ start });
    const { served, mostHeld } = await arrive(pool, 15, 60);
    expect(pool.target('python')).toBe(2);
    expect(served.slice(2)).toEqual(Array(13).fill('ready'));
    expect(mostHeld).toBe(2);
  });

  it('never holds more than the memory budget, whatever the rate', async () => {
    const { start } = fakeStarts(150, 8);
    const pool = newPool({ start, memoryMb: 28 }); // room for three 8 MB processes
    const { mostHeld, target } = await arrive(pool, 30, 30);
    expect(target).toBeGreaterThan(3); // the rate asks for more
    expect(mostHeld).toBe(3);
  });

  it('starts the replacement as the last ready process is taken, before the run is over', async () => {
    const { state, start } = fakeStarts(20);
    const pool = newPool({ start, size: 1 });
    pool.take('python');
    pool.replenish('python');
    await sleep(50);
    const before = state.started;
    const warm = pool.take('python');
    expect(warm?.isReady).toBe(true);
    await sleep(5); // the run is still going: no replenish() yet
    expect(state.started).toBeGreaterThan(before);
    await warm?.discard();
  });

  it('has at most maxStarting starts under way at once, and begins the next as one is ready', async () => {
    const { state, start } = fakeStarts(100);
    const pool = newPool({ start, size: 5, maxStarting: 2 });
    pool.take('python'); // the first request of a kind: none ready, five wanted
    pool.replenish('python');
    await sleep(20);
    expect(state.started).toBe(2);
    await sleep(120); // the first two wait now: two more begin
    expect(state.started).toBe(4);
    expect(pool.readyCounts().python).toBe(4);
    await sleep(120);
    expect(state.started).toBe(5);
    await sleep(120);
    expect(state.started).toBe(5); // the pool holds its five: nothing more
  });

  it('falls back to CODEXEC_POOL_SIZE when runs stop, and empties when idle', async () => {
    const { state, start } = fakeStarts(100);
    const pool = newPool({ start, idleMs: 400 });
    expect((await arrive(pool, 20, 25)).target).toBeGreaterThan(2);
    await sleep(200); // a pause longer than the starts: the gap it makes counts
    expect(pool.target('python')).toBe(2);
    await sleep(400);
    expect(pool.readyCounts()).toEqual({});
    await sleep(50);
    expect(state.live).toBe(0);
    expect(pool.target('python')).toBe(2);
  });
});
