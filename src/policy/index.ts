// Policy: decides what a request may do — which working directory, which environment —
// before anything runs. Its output feeds the SandboxSpec that backends execute.

export { resolveCommandDir } from './command-dir.js';
export { type CommandLists, checkCommand, matchesFromStart } from './commands.js';
export { ENV_ALLOWLIST, sandboxEnv } from './env.js';
export {
  createSecretsFilter,
  envSecrets,
  PATTERNS,
  SecretsFilter,
  type SecretsSettings,
  type StreamRedactor,
} from './secrets/index.js';
export { detectVenv, type Venv } from './venv.js';
export { forbiddenPaths, resolveWorkingDir } from './working-dir.js';
