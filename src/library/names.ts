import { InvalidInputError } from '../errors/index.js';

const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

/** A script name is a folder name: letters, digits, `-`, `_`, 1–64 characters, no leading dot. */
export function assertScriptName(name: string): string {
  if (!SAFE_NAME.test(name)) {
    throw new InvalidInputError(
      `script name ${JSON.stringify(name.slice(0, 80))} is not allowed: use 1-64 letters, digits, "-" or "_", ` +
        'not starting with "-" (e.g. "parse-excel-report")',
    );
  }
  return name;
}
