// The MCP server: tools over the shared services, served on stdio for both protocol eras.

// Approvals live in their own folder; these names stay here for the importers that knew them here.
export { type ApprovalEvent, ApprovalQueue, type Decision, type QueuedApproval } from '../approvals/index.js';
export { type CommandResult, prepareCommand, runPreparedCommand } from './command.js';
export { type FeedEvent, type LiveRun, RunFeed } from './feed.js';
export { createServer, VERSION } from './server.js';
export { createServices, type Services } from './services.js';
export { serve } from './stdio.js';
export { healthReport } from './tools/health.js';
