import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { isoTime, log } from '../util/index.js';

/** The file's shape: one UTC day and the CPU µs each principal's runs used in it. */
const ledgerSchema = z.object({
  day: z.string(),
  cpu_usec: z.record(z.string(), z.number().nonnegative()),
});

/** The UTC day of `ms`, as YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return isoTime(ms).slice(0, 10);
}

/**
 * CPU used per principal on the current UTC day, kept in memory and in a small JSON file
 * (`$CODEXEC_HOME/quota-usage.json`, written whole and renamed into place after each charge) so
 * that a restart does not hand out the day's budget again. A new day starts from zero.
 */
export class CpuLedger {
  private day: string;
  private readonly usec = new Map<string, number>();

  constructor(
    private readonly path: string,
    now: number,
  ) {
    this.day = utcDay(now);
    const saved = readLedger(path);
    if (saved?.day === this.day)
      for (const [who, used] of Object.entries(saved.cpu_usec)) this.usec.set(who, used);
  }

  /** µs of CPU `principal` used on the UTC day of `now`. */
  used(principal: string, now: number): number {
    this.roll(now);
    return this.usec.get(principal) ?? 0;
  }

  /** Add `usec` to `principal`'s day, and write the file (a failure is logged: memory still counts). */
  charge(principal: string, usec: number, now: number): void {
    if (usec <= 0) return;
    this.roll(now);
    this.usec.set(principal, (this.usec.get(principal) ?? 0) + usec);
    try {
      this.save();
    } catch (error) {
      log('warn', `CODEXEC_QUOTAS: cannot write ${this.path}: ${(error as Error).message}`);
    }
  }

  private roll(now: number): void {
    const day = utcDay(now);
    if (day === this.day) return;
    this.day = day;
    this.usec.clear();
  }

  private save(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const temp = join(dirname(this.path), `.quota-usage.${randomBytes(4).toString('hex')}.tmp`);
    const body = JSON.stringify({ day: this.day, cpu_usec: Object.fromEntries(this.usec) });
    try {
      writeFileSync(temp, body, { mode: 0o600 });
      renameSync(temp, this.path);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }
}

function readLedger(path: string): z.infer<typeof ledgerSchema> | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      log(
        'warn',
        `CODEXEC_QUOTAS: cannot read ${path}: ${(error as Error).message}; the day starts from zero`,
      );
    return undefined;
  }
  try {
    const parsed = ledgerSchema.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
  } catch {
    // fall through
  }
  log('warn', `CODEXEC_QUOTAS: ${path} is not a usage file; the day starts from zero`);
  return undefined;
}
