import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { LANGUAGES, type Language } from '../../runtimes/index.js';

/** The languages CODEXEC_ALLOWED_RUNTIMES lets code run in, in the usual order. */
export function allowedLanguages(config: Config): Language[] {
  return LANGUAGES.filter((language) => config.gate.allowedRuntimes.includes(language));
}

/** A `language` field that shows clients only the allowed languages (the gate refuses others). */
export function advertisedLanguage(config: Config, description: string) {
  const allowed = allowedLanguages(config);
  return z.enum(allowed as [Language, ...Language[]]).describe(description);
}

/** Package managers install_package offers: pip for python, npm for node or typescript. */
export function packageLanguages(config: Config): Array<'python' | 'node'> {
  const allowed = config.gate.allowedRuntimes;
  const managers: Array<'python' | 'node'> = [];
  if (allowed.includes('python')) managers.push('python');
  if (allowed.includes('node') || allowed.includes('typescript')) managers.push('node');
  return managers;
}
