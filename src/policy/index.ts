// Policy: the one place that decides what a request may do — allowed runtimes, the rules, whether
// it needs approval, which working directory and environment — before anything runs.

export type { ApprovedBy, AuditAttempt, AuditSink } from './audit.js';
export { BUILTIN_RULES } from './builtin-rules.js';
export { openCommandDir } from './command-dir.js';
export { type CommandLists, checkCommand, matchesFromStart } from './commands.js';
export { ENV_ALLOWLIST, sandboxEnv } from './env.js';
export {
  decide,
  type GateDecision,
  type GatePolicy,
  type GateRequest,
  prepareDecision,
  runtimeRefusal,
} from './gate.js';
export { type DirArgument, HostDirs } from './host-dir.js';
export { loadRules, policyPath } from './policy-file.js';
export {
  checkRules,
  compileRule,
  RULE_ACTIONS,
  type Rule,
  type RuleAction,
  type RuleSet,
  type RuleSpec,
  type RuleVerdict,
} from './rules.js';
export {
  createSecretsFilter,
  envSecrets,
  PATTERNS,
  SecretsFilter,
  type SecretsSettings,
  type StreamRedactor,
} from './secrets/index.js';
export { loadShellParser } from './shell/index.js';
export { detectVenv, type Venv } from './venv.js';
export { forbiddenPaths } from './working-dir.js';
