// Configuration: one zod schema over the environment variables and the optional config file.
// loadConfig() resolves it once at start-up; everything else receives the Config object.

export { type Config, loadConfig } from './load.js';
export { commandWorkspace, globalPackageDirs, runRoots } from './paths.js';
export type { Quota, QuotaTable } from './quotas.js';
export {
  APPROVAL_MODES,
  type ApprovalMode,
  type Approver,
  RUNTIME_NAMES,
  SANDBOX_MODES,
  type SandboxMode,
  SETTING_NAMES,
  type SettingName,
  settingsSchema,
} from './schema.js';
export { CODEMODE_TOOLS, TOOL_NAMES } from './tools.js';
