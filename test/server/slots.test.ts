// RunSlots alone (no server): first come, first served; a slot handed straight to the next in
// line; the queue's bound, its wait, a cancel and the server's stop each refuse with LIMIT_REACHED.
import { describe, expect, it } from 'vitest';
import { PendingApprovals } from '../../src/approvals/index.js';
import { type Release, RunSlots } from '../../src/server/slots.js';

const slots = (running: number, queued = 10, waitMs = 10_000) => new RunSlots({ running, queued, waitMs });

describe('RunSlots', () => {
  it('gives free slots at once, without a promise, and counts them', () => {
    const gate = slots(2);
    const a = gate.acquire();
    const b = gate.acquire();
    expect(typeof a).toBe('function');
    expect(typeof b).toBe('function');
    expect(gate.status()).toEqual({ running: 2, queued: 0, max: 2 });
    (a as Release)();
    (a as Release)(); // a second release changes nothing
    expect(gate.status().running).toBe(1);
  });

  it('serves waiting calls in arrival order, handing each freed slot to the first', async () => {
    const gate = slots(1);
    const first = gate.acquire() as Release;
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) =>
      Promise.resolve(gate.acquire()).then((release) => {
        order.push(n);
        return release;
      }),
    );
    expect(gate.status()).toEqual({ running: 1, queued: 3, max: 1 });
    first();
    const second = await waiting[0];
    // A newcomer does not overtake the line while a slot is handed on.
    const late = gate.acquire();
    expect(typeof late).not.toBe('function');
    second?.();
    (await waiting[1])?.();
    (await waiting[2])?.();
    (await late)();
    expect(order).toEqual([1, 2, 3]);
    expect(gate.status()).toEqual({ running: 0, queued: 0, max: 1 });
  });

  it('refuses past the queue at once, and a call that waited too long', async () => {
    const gate = slots(1, 1, 50);
    gate.acquire();
    const waiting = gate.acquire();
    expect(() => gate.acquire()).toThrow(/CODEXEC_MAX_QUEUED_RUNS/);
    await expect(waiting).rejects.toMatchObject({
      code: 'LIMIT_REACHED',
      message: /CODEXEC_QUEUE_TIMEOUT_MS/,
    });
    expect(gate.status()).toEqual({ running: 1, queued: 0, max: 1 });
  });

  it('lets a cancelled call leave the line, and refuses everyone once closed', async () => {
    const gate = slots(1);
    const held = gate.acquire() as Release;
    const controller = new AbortController();
    const cancelled = gate.acquire(controller.signal);
    const other = gate.acquire();
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'LIMIT_REACHED', message: /cancelled/ });
    expect(gate.status().queued).toBe(1);
    gate.close();
    await expect(other).rejects.toMatchObject({ message: /shutting down/ });
    expect(() => gate.acquire()).toThrow(/shutting down/);
    held();
    expect(gate.status()).toEqual({ running: 0, queued: 0, max: 1 });
  });
});

describe('PendingApprovals', () => {
  it('counts up to its bound, then refuses naming CODEXEC_MAX_PENDING_APPROVALS', () => {
    const pending = new PendingApprovals(2, 2);
    const a = pending.enter('alice');
    pending.enter('bob');
    expect(() => pending.enter('carol')).toThrow(/CODEXEC_MAX_PENDING_APPROVALS\)/);
    a();
    a();
    expect(pending.count).toBe(1);
    pending.enter('carol');
    expect(pending.count).toBe(2);
  });

  it("bounds each principal's share: one principal's full share leaves room for another", () => {
    const pending = new PendingApprovals(4, 2);
    const first = pending.enter('alice');
    pending.enter('alice');
    expect(() => pending.enter('alice')).toThrow(/CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL/);
    pending.enter('bob');
    expect(pending.count).toBe(3);
    first();
    pending.enter('alice'); // a place freed is hers again
    pending.enter('carol');
    expect(pending.count).toBe(4);
    expect(() => pending.enter('dave')).toThrow(/CODEXEC_MAX_PENDING_APPROVALS\)/);
  });

  it('the local principal (stdio, the CLI) shares the server with nobody: only the whole bound', () => {
    const pending = new PendingApprovals(4, 2);
    for (let i = 0; i < 4; i++) pending.enter('local');
    expect(() => pending.enter('local')).toThrow(/CODEXEC_MAX_PENDING_APPROVALS\)/);
  });
});
