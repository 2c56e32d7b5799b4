// Disk bounds: what codexec's workspaces hold, measured off the hot path, capped per workspace
// and per principal (CODEXEC_MAX_WORKSPACE_MB, CODEXEC_MAX_PRINCIPAL_DISK_MB).
export { DiskQuotaError } from './errors.js';
export {
  type DiskLimits,
  DiskQuota,
  type DiskWatch,
  RUN_TIMING,
  SESSION_TIMING,
  type WatchTiming,
} from './quota.js';
export { type DiskUsage, MAX_ENTRIES, measureDir } from './usage.js';
