// The MCP server: tools over the shared services, served on stdio for both protocol eras.

export { type CommandResult, prepareCommand, runPreparedCommand } from './command.js';
export { createServer, VERSION } from './server.js';
export { createServices, type Services } from './services.js';
export { serve } from './stdio.js';
