// Approvals: one flow for every question a run raises (ask → route to an approver, the MCP client
// or the dashboard → decide → audit), which the tools, tasks, dashboard and egress proxy all use.

export { type Approval, type Attempt, audit, type RunFacts, type Verdict } from './audit.js';
export {
  ApprovalAsker,
  type ClientChannel,
  clientCapabilities,
  isModernRequest,
  SESSIONLESS,
} from './client.js';
export {
  type ApprovalEvent,
  type ApprovalPeers,
  ApprovalQueue,
  type DashboardReply,
  type QueuedApproval,
} from './dashboard.js';
export { type Answered, Approvals, type ApprovalsOptions, type Asked, type AskedBy } from './flow.js';
export { PendingApprovals } from './pending.js';
export { DECISIONS, type Decision, type Question } from './question.js';
export { SharedApprovals } from './share.js';
export { LocalSpentTickets, type SpentTickets } from './spent.js';
export { ViewApprovals, type ViewedApproval } from './view.js';
