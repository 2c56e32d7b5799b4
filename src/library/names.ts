import { InvalidInputError } from '../errors/index.js';

const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

/** Whether `name` can be a script's folder: 1–64 letters, digits, `-`, `_`, no leading dot or dash. */
export function isScriptName(name: string): boolean {
  return SAFE_NAME.test(name);
}

/** A script name is a folder name: letters, digits, `-`, `_`, 1–64 characters, no leading dot. */
export function assertScriptName(name: string): string {
  if (!isScriptName(name)) {
    throw new InvalidInputError(
      `script name ${JSON.stringify(name.slice(0, 80))} is not allowed: use 1-64 letters, digits, "-" or "_", ` +
        'not starting with "-" (e.g. "parse-excel-report")',
    );
  }
  return name;
}
