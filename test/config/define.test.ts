import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  from,
  fromContext,
  joinLayouts,
  resolveLayout,
  setting,
  settingsOf,
} from '../../src/config/settings/define.js';

const context = { home: '/home/u', root: '/home/u/.codexec', runs: '/home/u/.codexec' };

describe('a settings layout', () => {
  const limit = setting('X_LIMIT', () => z.coerce.number().default(4));
  const total = setting('X_TOTAL', () => z.coerce.number().optional());
  const layout = {
    limit,
    group: {
      total: from([total, limit], ([set, per]) => set ?? 2 * per),
      note: setting('X_NOTE', () => z.string().optional()),
      where: fromContext(({ runs }) => `${runs}/x`),
    },
  };

  it('lists each setting once, in the order the layout reaches them', () => {
    expect([...settingsOf(layout).keys()]).toEqual(['X_LIMIT', 'X_TOTAL', 'X_NOTE']);
  });

  it('refuses a variable declared by two settings', () => {
    expect(() =>
      settingsOf({ a: setting('X_A', () => z.string()), b: setting('X_A', () => z.string()) }),
    ).toThrow(/setting X_A is declared twice/);
  });

  it('refuses a Config field two subjects both lay out', () => {
    expect(() => joinLayouts({ limit }, { other: total }, { limit: total })).toThrow(
      /Config field limit is laid out twice/,
    );
    expect(Object.keys(joinLayouts({ limit }, { other: total }))).toEqual(['limit', 'other']);
  });

  it('fills the layout, deriving fields from settings and leaving absent values out', () => {
    const config = resolveLayout(layout, { X_LIMIT: 3, X_TOTAL: undefined, X_NOTE: undefined }, context);
    expect(config).toStrictEqual({ limit: 3, group: { total: 6, where: '/home/u/.codexec/x' } });
    expect('note' in config.group).toBe(false);
    const set = resolveLayout(layout, { X_LIMIT: 3, X_TOTAL: 5, X_NOTE: 'n' }, context);
    expect(set.group).toStrictEqual({ total: 5, note: 'n', where: '/home/u/.codexec/x' });
  });
});
