// codexec over Streamable HTTP: bearer principals, Host/Origin checks, body and connection limits, graceful stop.
export { loadPrincipals, type Principals } from './auth.js';
export { isLoopback } from './guards.js';
export { type Dashboard, type DashboardDeps, type HttpOptions, serveHttp } from './serve.js';
