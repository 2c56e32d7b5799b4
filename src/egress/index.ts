// The egress allowlist (issue #32): rules for what code may reach, the proxy lanes through which a
// sandbox with network `allowlist` reaches it, each connection checked and recorded, and how runs
// and sessions use them.
export { MAX_OPEN, openLane } from './proxy.js';
export { type Decision, EgressRules, type HostRule, isInternal, matches, parseRules } from './rules.js';
export {
  CONNECTIONS,
  callRules,
  deniedOf,
  EgressRecord,
  FORWARDER_PORT,
  type LoggedConnection,
  loggedConnection,
  type OpenedLane,
  openRunLane,
  PROXY_SOCKET,
  proxyEnv,
} from './runs.js';
export type { EgressConnection, Lane, LaneOptions, LaneUser, Resolve } from './types.js';
