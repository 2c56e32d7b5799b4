// How entries are keyed in the index. Row ids are time-ordered so newest-first is a reverse scan
// of the primary key (and of the FTS index, which shares it) rather than a sort of every match.

/** Ids per millisecond: ties within one ms are told apart by insertion order. */
export const ID_SLOTS = 1024;
// Stay within JavaScript's safe integers (ids come back to JS as numbers): good until year 2248.
const MAX_MS = Math.floor(Number.MAX_SAFE_INTEGER / ID_SLOTS) - 1;

/** The smallest row id of an entry executed at `ms`. */
export function timeKey(ms: number): number {
  return Math.min(Math.max(Math.trunc(ms), 0), MAX_MS) * ID_SLOTS;
}

/**
 * A session id as one FTS token (letters and digits only), so the FTS session column matches
 * whole ids: `sess_ab12` → `sessab12`. Empty when the id has no letters or digits.
 */
export function sessionToken(id: string): string {
  return id.replace(/[^\p{L}\p{N}]/gu, '').toLowerCase();
}
