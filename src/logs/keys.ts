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
  return token(id);
}

/**
 * A principal as one FTS token: any name (tokens files allow any), hex-encoded behind a letter,
 * so two principals never share a token.
 */
export function ownerToken(principal: string): string {
  return `o${Buffer.from(principal, 'utf8').toString('hex')}`;
}

function token(text: string): string {
  return text.replace(/[^\p{L}\p{N}]/gu, '').toLowerCase();
}

/**
 * FTS tokens for an entry's language and status — one each, and one for the pair, so a search
 * with both filters merges one short doclist instead of two long ones.
 */
export function facetTokens(language: string | null, status: string): string {
  const lang = language === null ? '' : token(language);
  return lang === '' ? `s${status}` : `l${lang} s${status} l${lang}s${status}`;
}

/** The facet token that selects `language` and/or `status` (at least one given). */
export function facetFilter(language: string | undefined, status: string | undefined): string {
  const lang = language === undefined ? '' : `l${token(language)}`;
  const stat = status === undefined ? '' : `s${status}`;
  return `${lang}${stat}`;
}
