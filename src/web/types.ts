import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApprovalQueue, RunFeed, Services } from '../server/index.js';

/** What the dashboard's server side is handed when serve --http first loads it. */
export interface DashboardDeps {
  readonly services: Services & { readonly feed: RunFeed; readonly approvals: ApprovalQueue };
  /** CODEXEC_HTTP_ADMINS: principals that see everyone's runs and sessions. */
  readonly admins: readonly string[];
}

/** The dashboard as serve --http calls it: its files, and its API as the caller's principal. */
export interface Dashboard {
  serveAsset(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  serveApi(req: IncomingMessage, res: ServerResponse, path: string, principal: string): Promise<void>;
}
