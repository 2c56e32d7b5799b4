/**
 * What `promise` resolves to if it settles within `ms`, else undefined (the timer is cleared
 * either way). A plain timer: an aborted timers/promises sleep costs a DOMException with its
 * stack, on every run's path.
 */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

/**
 * `at` as `Date.prototype.toISOString` writes it (UTC, milliseconds, `Z`), without calling it:
 * V8's asks ICU for the local time zone first, which maps ~0.8 MB of ICU's zone data into the
 * server on its first run (bench/idle-rss.mjs). Years outside 0–9999 are written as toISOString
 * writes them (a sign and six digits); an invalid time throws as it does.
 */
export function isoTime(at: number | Date = Date.now()): string {
  const date = typeof at === 'number' ? new Date(at) : at;
  const year = date.getUTCFullYear();
  if (Number.isNaN(year)) throw new RangeError('Invalid time value');
  const yyyy = year >= 0 && year <= 9999 ? pad(year, 4) : `${year < 0 ? '-' : '+'}${pad(Math.abs(year), 6)}`;
  return `${yyyy}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)}Z`;
}
