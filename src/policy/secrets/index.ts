// The streaming secrets filter: masks secret values and shapes in run output before it reaches
// results, progress notifications and logs, also when a secret is split across writes.

export { SecretsFilter, type SecretsFilterOptions, type StreamRedactor } from './filter.js';
export { PATTERNS, type SecretPattern } from './patterns.js';
export {
  createSecretsFilter,
  envSecrets,
  MIN_ENV_SECRET_LENGTH,
  SECRET_NAME,
  type SecretsSettings,
} from './sources.js';
