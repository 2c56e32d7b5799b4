import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../errors/index.js';
import { expandHome, log } from '../util/index.js';
import { reconcile } from './coherence.js';
import { runHome } from './paths.js';
import { type Config, configFrom, parseSettings, SETTING_NAMES } from './settings/index.js';

type RawSettings = Partial<Record<string, unknown>>;

/**
 * Resolve configuration: env > `$CODEXEC_HOME/config.json` (optional) > defaults.
 * Throws ConfigError with `NAME: what is wrong` for the first invalid setting, or for two set
 * settings that conflict; a default that conflicts with a set value is moved and `warn`ed about.
 * `home`: the user's home directory, which `~` names.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (message) => log('warn', message),
  home: string = homedir(),
  /** Settings that conflict, noted here instead of thrown (doctor reports them and goes on). */
  problems?: string[],
): Config {
  const fromEnv: RawSettings = {};
  for (const name of SETTING_NAMES) {
    const value = env[name];
    if (value !== undefined && value !== '') fromEnv[name] = value;
  }
  const codexecHome = expandHome(String(fromEnv.CODEXEC_HOME ?? '~/.codexec'), home);
  const raw = { ...readConfigFile(join(codexecHome, 'config.json')), ...fromEnv };
  const { settings, warnings } = reconcile(parseSettings(raw), new Set(Object.keys(raw)), problems);
  // LOG_LEVEL is not applied yet (the caller does that with the result), so honour it here.
  if (settings.LOG_LEVEL !== 'error') for (const warning of warnings) warn(warning);
  const root = expandHome(settings.CODEXEC_HOME, home);
  const runs = runHome(root, { explicit: fromEnv.CODEXEC_HOME !== undefined, uid: process.getuid?.() });
  return configFrom(settings, { home, root, runs });
}

function readConfigFile(path: string): RawSettings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(`${path}: cannot read (${(error as Error).message})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`${path}: must be a JSON object of settings, e.g. {"CODEXEC_MAX_SESSIONS": 3}`);
  }
  const unknown = Object.keys(value).filter((key) => !(SETTING_NAMES as string[]).includes(key));
  if (unknown.length > 0) throw new ConfigError(`${path}: unknown setting ${unknown.join(', ')}`);
  return value as RawSettings;
}
