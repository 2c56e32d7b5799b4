import { CodexecError, InvalidInputError } from '../errors/index.js';
import type { LibraryLimits, ScriptMetadata } from './types.js';

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

/** Code over CODEXEC_MAX_SCRIPT_BYTES (counted in UTF-8 bytes) is refused before anything is written. */
export function assertCodeSize(code: string, limits: LibraryLimits): void {
  const bytes = Buffer.byteLength(code, 'utf8');
  if (bytes > limits.maxScriptBytes) {
    throw new CodexecError(
      'LIMIT_REACHED',
      `script code is ${bytes} bytes; a saved script may have at most ${limits.maxScriptBytes} ` +
        '(CODEXEC_MAX_SCRIPT_BYTES)',
    );
  }
}

const EXTENSIONS: Record<ScriptMetadata['language'], string> = {
  python: 'py',
  node: 'js',
  typescript: 'ts',
  bash: 'sh',
};

/** The file extension of a script's code: `script.<ext>`, `versions/<n>.<ext>`. */
export const extension = (language: ScriptMetadata['language']): string => EXTENSIONS[language];
