import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { LANGUAGE_ALIASES, LANGUAGES, type Language } from '../../runtimes/index.js';

/** The languages CODEXEC_ALLOWED_RUNTIMES lets code run in, in the usual order. */
export function allowedLanguages(config: Config): Language[] {
  return LANGUAGES.filter((language) => config.gate.allowedRuntimes.includes(language));
}

type Alias = keyof typeof LANGUAGE_ALIASES;
const ALIASES = Object.keys(LANGUAGE_ALIASES) as Alias[];

/** A language's name or one of its aliases (py, js, nodejs, ts, sh, shell), read as the language. */
export const languageInput = () =>
  z
    .enum([...LANGUAGES, ...ALIASES])
    .transform(
      (name): Language => (name in LANGUAGE_ALIASES ? LANGUAGE_ALIASES[name as Alias] : (name as Language)),
    );

/**
 * A `language` field that shows clients only the allowed languages (the gate refuses others), and
 * their aliases.
 */
export function advertisedLanguage(config: Config, description: string, withAliases = true) {
  const allowed = allowedLanguages(config);
  if (!withAliases) return z.enum(allowed as [Language, ...Language[]]).describe(description);
  const aliases = ALIASES.filter((alias) => allowed.includes(LANGUAGE_ALIASES[alias]));
  return z
    .enum([...allowed, ...aliases] as [string, ...string[]])
    .describe(`${description} (aliases: ${aliases.join(', ')})`);
}

/** Package managers install_package offers: pip for python, npm for node or typescript. */
export function packageLanguages(config: Config): Array<'python' | 'node'> {
  const allowed = config.gate.allowedRuntimes;
  const managers: Array<'python' | 'node'> = [];
  if (allowed.includes('python')) managers.push('python');
  if (allowed.includes('node') || allowed.includes('typescript')) managers.push('node');
  return managers;
}
