// Policy: decides what a request may do — which working directory, which environment —
// before anything runs. Its output feeds the SandboxSpec that backends execute.

export { ENV_ALLOWLIST, sandboxEnv } from './env.js';
export {
  createSecretsFilter,
  envSecrets,
  PATTERNS,
  SecretsFilter,
  type SecretsSettings,
  type StreamRedactor,
} from './secrets/index.js';
export { forbiddenPaths, resolveWorkingDir } from './working-dir.js';
