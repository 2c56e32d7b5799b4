export type { EgressConnection, Lane, LaneUser } from './proxy.js';
export { openLane } from './proxy.js';
export { EgressRules, type HostRule, isInternal, parseRules } from './rules.js';
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
