// The Quotas class itself, on a clock of the test's: `*` and an own entry merged field by field,
// the fixed UTC-minute window, the per-day CPU ledger rolling over at 00:00 UTC and read back.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuLedger, Quotas } from '../../src/quotas/index.js';
import { tempDir } from '../helpers/server.js';

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NOON = Date.UTC(2026, 10, 26, 12, 0, 30); // 30 s into a minute

function refusal(call: () => unknown): Record<string, unknown> | undefined {
  try {
    call();
    return undefined;
  } catch (error) {
    const { code, limit, retryAfterMs } = error as { code: string; limit: string; retryAfterMs?: number };
    return { code, limit, retryAfterMs };
  }
}

describe('Quotas', () => {
  it("an own entry replaces only the fields it names; others get `*`'s", () => {
    const table = { '*': { max_sessions: 1, runs_per_minute: 2 }, alice: { runs_per_minute: 5 } };
    const quotas = new Quotas(table, new CpuLedger(join(dir, 'a.json'), NOON));
    expect(quotas.of('alice')).toEqual({ max_sessions: 1, runs_per_minute: 5 });
    expect(quotas.of('bob')).toEqual({ max_sessions: 1, runs_per_minute: 2 });
  });

  it('runs_per_minute: a fixed UTC minute; retry_after_ms is the time to the next one', () => {
    let now = NOON;
    const quotas = new Quotas(
      { '*': { runs_per_minute: 1 } },
      new CpuLedger(join(dir, 'b.json'), now),
      () => now,
    );
    quotas.admit('bob').end(0);
    expect(refusal(() => quotas.admit('bob'))).toEqual({
      code: 'QUOTA_EXCEEDED',
      limit: 'runs_per_minute',
      retryAfterMs: 30_000,
    });
    // A refused call is not counted: the next minute admits one again, and refuses the second.
    expect(refusal(() => quotas.admit('bob'))).toMatchObject({ retryAfterMs: 30_000 });
    now += 30_000; // the next minute
    expect(refusal(() => quotas.admit('bob').end(0))).toBeUndefined();
    expect(refusal(() => quotas.admit('bob'))).toMatchObject({ retryAfterMs: 60_000 });
  });

  it('cpu_seconds_per_day: charged at the end, kept in the file, a new UTC day starts from zero', () => {
    const path = join(dir, 'c.json');
    let now = NOON;
    const quotas = new Quotas({ '*': { cpu_seconds_per_day: 1 } }, new CpuLedger(path, now), () => now);
    const hold = quotas.admit('carol');
    expect(refusal(() => quotas.admit('carol').end(0))).toBeUndefined(); // nothing charged yet
    hold.end(1_200_000);
    expect(refusal(() => quotas.check('carol'))).toEqual({
      code: 'QUOTA_EXCEEDED',
      limit: 'cpu_seconds_per_day',
      retryAfterMs: 12 * 3_600_000 - 30_000,
    });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
      day: '2026-11-26',
      cpu_usec: { carol: 1_200_000 },
    });
    // Another server on the same file, the same day: still spent; the next day: free.
    const again = new Quotas({ '*': { cpu_seconds_per_day: 1 } }, new CpuLedger(path, now), () => now);
    expect(refusal(() => again.check('carol'))?.limit).toBe('cpu_seconds_per_day');
    now += 12 * 3_600_000;
    expect(refusal(() => again.check('carol'))).toBeUndefined();
  });
});
