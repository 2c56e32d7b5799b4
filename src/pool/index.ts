// The warm pool: sandboxed interpreters started ahead of time, each used for one execution and
// then discarded, so a one-shot run skips interpreter and sandbox start-up.

export { type PoolOptions, WarmPool } from './pool.js';
export { expireWorkspaces, type RetentionOptions, WorkspaceRetention } from './retention.js';
export { type ScriptFile, WarmProcess } from './warm.js';
