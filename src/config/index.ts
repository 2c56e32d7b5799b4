// Configuration: every setting written once (variable, check, description, place in Config) over
// the environment and the optional config file; loadConfig() resolves it once at start-up.

export { loadConfig } from './load.js';
export { type MountRule, mountsOf } from './mounts.js';
export { commandWorkspace, globalPackageDirs, runRoots, sharedTrees } from './paths.js';
export type { Quota, QuotaTable } from './quotas.js';
export {
  APPROVAL_MODES,
  type ApprovalMode,
  type Approver,
  type Config,
  RUNTIME_NAMES,
  SANDBOX_MODES,
  type SandboxMode,
  SETTING_NAMES,
  type SettingName,
} from './settings/index.js';
export { CODEMODE_TOOLS, TOOL_NAMES } from './tools.js';
