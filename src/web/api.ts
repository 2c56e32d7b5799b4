import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '../approvals/index.js';
import { CodexecError } from '../errors/index.js';
import { searchFiltersSchema } from '../logs/index.js';
import { healthReport } from '../server/index.js';
import type { SessionInfo } from '../sessions/index.js';
import { asPrincipal, log } from '../util/index.js';
import { recentAudit, verifyTrail } from './audit.js';
import { streamEvents } from './events.js';
import type { DashboardDeps } from './types.js';

/** One API call: who asks, whether they see everyone's, and the services as they may see them. */
interface Call {
  readonly deps: DashboardDeps;
  readonly principal: string;
  readonly admin: boolean;
  /** In CODEXEC_HTTP_APPROVERS: sees every approval waiting, decides other principals'. */
  readonly approver: boolean;
  readonly url: URL;
}

const SESSION_ACTION = /^\/api\/sessions\/([^/]+)\/(close|kill)$/;
const APPROVAL_DECISION = /^\/api\/approvals\/([^/]+)\/(approve|deny|approve_trust_session)$/;

/**
 * The page's JSON API. Each answer is scoped to the caller's principal (bound to the request when
 * it arrived), through the same services the MCP tools use; CODEXEC_HTTP_ADMINS see all, and
 * CODEXEC_HTTP_APPROVERS see every approval waiting (the queue decides who may answer one).
 */
export async function serveApi(
  deps: DashboardDeps,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  principal: string,
): Promise<void> {
  const call: Call = {
    deps,
    principal,
    admin: deps.admins.includes(principal),
    approver: deps.services.approvals.mayDecide(principal),
    url: new URL(req.url ?? '/', 'http://dashboard'),
  };
  try {
    const action = SESSION_ACTION.exec(path);
    if (req.method === 'POST' && action?.[1] && action[2]) {
      return json(res, 200, await closeSession(call, decodeURIComponent(action[1]), action[2]));
    }
    const decided = APPROVAL_DECISION.exec(path);
    if (req.method === 'POST' && decided?.[1] && decided[2]) {
      return json(res, 200, await decide(call, decodeURIComponent(decided[1]), decided[2] as Decision));
    }
    if (req.method === 'POST' && path === '/api/audit/verify') {
      // The report counts every principal's entries: an admin's to ask for.
      if (!call.admin) return json(res, 403, problem('FORBIDDEN', 'audit verify is for CODEXEC_HTTP_ADMINS'));
      return json(res, 200, await verifyTrail(deps.services));
    }
    if (req.method !== 'GET')
      return json(res, 405, problem('INVALID_INPUT', 'use GET (POST for close/kill and decisions)'));
    switch (path) {
      case '/api/me':
        return json(res, 200, { principal, admin: call.admin, approver: call.approver });
      case '/api/events':
        return streamEvents(req, res, deps.services, {
          runs: call.admin ? undefined : principal,
          approvals: approvalScope(call),
        });
      case '/api/approvals':
        return json(res, 200, { approvals: await deps.services.approvals.listAnywhere(approvalScope(call)) });
      case '/api/sessions':
        return json(res, 200, { sessions: await sessions(call) });
      case '/api/logs':
        return json(res, 200, await searchLogs(call));
      case '/api/audit':
        return json(res, 200, {
          entries: await recentAudit(deps.services, call.admin ? undefined : principal),
        });
      case '/api/health':
        return json(res, 200, await healthReport(call.deps.services));
      default:
        return json(res, 404, problem('NOT_FOUND', `no API at ${path}`));
    }
  } catch (error) {
    if (!(error instanceof CodexecError)) throw error;
    const status =
      error.code === 'INVALID_INPUT'
        ? 400
        : error.code === 'FORBIDDEN'
          ? 403
          : error.code.endsWith('NOT_FOUND')
            ? 404
            : 409;
    return json(res, status, problem(error.code, error.message));
  }
}

/** Whose approvals the caller sees: an admin's or an approver's view is everyone's (undefined). */
function approvalScope(call: Call): string | undefined {
  return call.admin || call.approver ? undefined : call.principal;
}

async function sessions(call: Call): Promise<(SessionInfo & { principal: string | null })[]> {
  const manager = call.deps.services.sessions;
  if (call.admin) return manager.listEveryone();
  const { sessions } = await manager.list(); // the caller's: its principal is bound to the request
  return sessions.map((session) => ({ ...session, principal: call.principal }));
}

async function closeSession(call: Call, sessionId: string, how: string) {
  // Another principal's session is SESSION_NOT_FOUND, as over MCP; an admin acts for its owner.
  const manager = call.deps.services.sessions;
  const owner = call.admin ? (manager.ownerOf(sessionId) ?? call.principal) : call.principal;
  return asPrincipal(owner, () => manager.close(sessionId, how === 'kill' ? 'killed' : 'closed'));
}

/**
 * Answer a waiting approval as the gate's client would: the queue lets an approver answer other
 * principals' (FORBIDDEN otherwise, 403). The audit entry names the decider (`decided_by`).
 */
async function decide(call: Call, id: string, decision: Decision) {
  const approval = await call.deps.services.approvals.decideAnywhere(id, decision, call.principal);
  log('info', `approval ${id} (${approval.principal}'s ${approval.tool}): ${decision} by ${call.principal}`);
  return { id, decision };
}

async function searchLogs(call: Call) {
  const params = Object.fromEntries(
    [...call.url.searchParams].filter(([, value]) => value !== '').map(([name, value]) => [name, value]),
  );
  const parsed = searchFiltersSchema().safeParse({
    ...params,
    ...(params.limit !== undefined && { limit: Number(params.limit) }),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return Promise.reject(
      new CodexecError('INVALID_INPUT', `${issue?.path.join('.') || 'query'}: ${issue?.message}`),
    );
  }
  return call.deps.services.history.search(parsed.data, call.admin ? undefined : call.principal);
}

function problem(code: string, message: string) {
  return { error: { code, message } };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}
