import type { Quota } from '../config/index.js';

/** A run admitted under its principal's quotas: `end` once it is over, with the CPU it used. */
export interface RunHold {
  end(cpuUsec: number): void;
}

/**
 * What the gate and the session manager ask: Quotas (this process's counts) or SharedQuotas (the
 * shared database's, across replicas): a promise where the answer needs the database.
 */
export interface RunQuotas {
  /** `principal`'s quotas: `*`'s, with the fields of its own entry replacing them. */
  of(principal: string): Quota;
  /** Refuse (QUOTA_EXCEEDED) a run `principal` may not start now; counts nothing. */
  check(principal: string): void | Promise<void>;
  /** Admit a run of `principal` (or refuse it as check does): it counts until its hold ends. */
  admit(principal: string): RunHold | Promise<RunHold>;
  /** Refuse (QUOTA_EXCEEDED) a new session of `principal`, who has `open` sessions counted. */
  assertSessionRoom(principal: string, open: number): void;
}
