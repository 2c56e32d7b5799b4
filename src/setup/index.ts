// `codexec setup <client>`: merge codexec into an MCP client's config, then check it works.
export { CLIENTS, type ClientName, clientConfig, type ServerEntry } from './clients.js';
export { type Merged, mergeJson, mergeToml } from './merge.js';
export { verifyEntry } from './verify.js';
