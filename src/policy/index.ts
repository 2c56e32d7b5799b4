// Policy: the one place that decides what a request may do — allowed runtimes, the rules, whether
// it needs approval, which working directory and environment — before anything runs.

export { type ApprovedBy, type AuditAttempt, type AuditSink, MemoryAuditSink } from './audit.js';
export { BUILTIN_RULES } from './builtin-rules.js';
export { ENV_ALLOWLIST, sandboxEnv } from './env.js';
export { decide, type GateDecision, type GatePolicy, type GateRequest, runtimeRefusal } from './gate.js';
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
export { forbiddenPaths, resolveWorkingDir } from './working-dir.js';
