// codexec over Streamable HTTP: bearer principals, Origin/Host checks, body limit, graceful stop.
export { loadPrincipals, type Principals } from './auth.js';
export { isLoopback } from './guards.js';
export { type HttpOptions, serveHttp } from './serve.js';
