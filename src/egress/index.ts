// The egress allowlist: rules for what code may reach, the proxy lanes through which a
// sandbox with network `allowlist` reaches it, each connection checked and recorded, and how runs
// and sessions use them.

export { isPublicAddress } from './addresses.js';
export { type Credential, Credentials } from './credentials.js';
export { type Decision, denies, EgressRules, type HostRule, matches, parseRules } from './rules.js';
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
