import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { ConfigError } from '../errors/index.js';

/**
 * A setting's JSON file (CODEXEC_QUOTAS, CODEXEC_MOUNTS), read and checked at start-up: a file
 * that cannot be read, parsed or validated stops it, naming the setting, the file, the first bad
 * field and the form `expected`.
 */
export function readJsonFile<S extends z.ZodType>(
  name: string,
  path: string,
  schema: S,
  expected: string,
): z.output<S> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`${name}: cannot read ${path} (${why})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${name}: ${path}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const keys = issue?.code === 'unrecognized_keys' ? `: unknown field ${issue.keys.join(', ')}` : '';
  const where = issue?.path.join('.') || 'file';
  throw new ConfigError(
    `${name}: ${path}: ${where}${keys || `: ${issue?.message ?? 'invalid'}`} (expected ${expected})`,
  );
}
