import { CodexecError } from '../errors/index.js';

const NO_SCRIPT = 'no script named';

/**
 * The refusal for a name the principal has no script under (another's script reads the same);
 * with the principal's names, it offers the nearest ones.
 */
export function noScript(name: string, known: readonly string[] = []): CodexecError {
  const near = nearestNames(name, known);
  const offer = near.length > 0 ? `did you mean ${near.join(' or ')}? ` : '';
  return new CodexecError('NOT_FOUND', `${NO_SCRIPT} ${name}; ${offer}list_scripts shows what is saved`);
}

/** Whether `error` is noScript's refusal. */
export function isNoScript(error: unknown): boolean {
  return error instanceof CodexecError && error.code === 'NOT_FOUND' && error.message.startsWith(NO_SCRIPT);
}

/** Up to 3 names a typo away from `name` (an edit per 4 characters) or holding it, nearest first. */
export function nearestNames(name: string, known: readonly string[]): string[] {
  const wanted = name.toLowerCase();
  const room = Math.max(1, Math.floor(wanted.length / 4));
  return known
    .map((candidate) => {
      const lower = candidate.toLowerCase();
      const contains = lower.includes(wanted) || wanted.includes(lower);
      return { candidate, distance: contains ? 0 : editDistance(wanted, lower) };
    })
    .filter(({ distance }) => distance <= room)
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, 3)
    .map(({ candidate }) => candidate);
}

/** Levenshtein distance: inserts, deletes and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** The refusal for a version that is not kept, naming the range that is (`kept`: oldest first). */
export function noVersion(
  name: string,
  version: number,
  current: number,
  kept: readonly number[],
): CodexecError {
  const range = kept.length > 0 ? `; earlier versions kept: ${kept[0]}-${kept.at(-1)}` : '';
  return new CodexecError(
    'NOT_FOUND',
    `script ${name} has no version ${version} (current: ${current}${range})`,
  );
}
