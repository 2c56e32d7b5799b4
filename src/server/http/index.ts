// codexec over Streamable HTTP: bearer principals, Host/Origin checks, body and connection limits, graceful stop.

export type { Dashboard, DashboardDeps } from '../../web/index.js';
export { loadPrincipals, type Principals } from './auth.js';
export { isLoopback } from './guards.js';
export { type HttpOptions, type ServerAddition, serveHttp } from './serve.js';
