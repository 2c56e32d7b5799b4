import { randomBytes } from 'node:crypto';

export type IdPrefix = 'exec' | 'sess' | 'script' | 'proc';

/** `exec_` / `sess_` / `script_` / `proc_` followed by 12 random hex characters. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}
