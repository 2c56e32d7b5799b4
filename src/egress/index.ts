// The egress allowlist (issue #32): rules for what code may reach, and the proxy lanes through which
// a sandbox with network `allowlist` reaches it, each connection checked and recorded.
export { MAX_OPEN, openLane } from './proxy.js';
export { type Decision, EgressRules, type HostRule, isInternal, matches, parseRules } from './rules.js';
export type { EgressConnection, Lane, LaneOptions, LaneUser, Resolve } from './types.js';
