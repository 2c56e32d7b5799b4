// util/time: isoTime writes exactly what toISOString writes, without its time zone lookup.
import { describe, expect, it } from 'vitest';
import { isoTime } from '../../src/util/index.js';

describe('isoTime', () => {
  it('writes what Date.prototype.toISOString writes', () => {
    const times = [
      0,
      Date.now(),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2024, 1, 29, 0, 0, 0, 1),
      -1,
      Date.UTC(1, 0, 1) - 1, // the last millisecond of year 0
      Date.UTC(-1, 0, 1), // year -1: a sign and six digits
      Date.UTC(10000, 0, 1), // year 10000 as well
      8.64e15,
      -8.64e15,
    ];
    for (const ms of times) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString());
    }
  });

  it('throws for an invalid time, as toISOString does', () => {
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});
