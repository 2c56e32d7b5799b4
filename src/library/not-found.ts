import { CodexecError } from '../errors/index.js';

/** The refusal for a name the principal has no script under (another's script reads the same). */
export function noScript(name: string): CodexecError {
  return new CodexecError('NOT_FOUND', `no script named ${name}; list_scripts shows what is saved`);
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
