import { SecretsFilter } from './filter.js';

/** Environment variable names whose values are secrets (matched case-insensitively). */
export const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;
/** Shorter values would mask ordinary words and numbers (`AUTH=1`, `KEY_ID=42`). */
export const MIN_ENV_SECRET_LENGTH = 8;

/** The values of the server's own environment that are secrets by their variable's name. */
export function envSecrets(env: NodeJS.ProcessEnv): string[] {
  const values: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value.length >= MIN_ENV_SECRET_LENGTH && SECRET_NAME.test(name)) {
      values.push(value);
    }
  }
  return values;
}

export interface SecretsSettings {
  /** CODEXEC_REDACT_SECRETS. */
  readonly redact: boolean;
  /** The values read from CODEXEC_SECRETS_FILE at start-up. */
  readonly values: readonly string[];
}

/**
 * The server's filter, built once at start-up from its settings and its own environment;
 * undefined when redaction is off (the output path then does no work for it at all).
 */
export function createSecretsFilter(
  settings: SecretsSettings,
  env: NodeJS.ProcessEnv,
): SecretsFilter | undefined {
  if (!settings.redact) return undefined;
  return new SecretsFilter({ values: [...envSecrets(env), ...settings.values] });
}
