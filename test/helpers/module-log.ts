// The module log (test/fixtures/module-log.mjs): a server started with logEnv()'s environment
// writes every module it loads (import and require) to the log, one URL or path per line.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const MODULE_LOG_HOOK = resolve(import.meta.dirname, '../fixtures/module-log.mjs');

/** The log's path in `dir`, and the environment that makes a server write it. */
export function logEnv(dir: string) {
  const path = join(dir, 'modules.log');
  return { path, env: { NODE_OPTIONS: `--import=${MODULE_LOG_HOOK}`, CODEXEC_TEST_MODULE_LOG: path } };
}

/** What the log holds: every module loaded so far. */
export function logged(path: string): string[] {
  return readFileSync(path, 'utf8').trim().split('\n');
}
