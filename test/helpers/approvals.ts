// The dashboard's approval queue as tests see it: a serve --http with five principals (carol an
// admin, and so an approver unless CODEXEC_HTTP_APPROVERS says otherwise) under
// CODEXEC_APPROVAL=ask, the audit entries it wrote, and the API as a principal.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type HttpServer, startHttp } from './http.js';
import { tempDir } from './server.js';

export const ALICE = 'alice-token-0123456789';
export const BOB = 'bob-token-0123456789ab';
export const CAROL = 'carol-token-0123456789'; // CODEXEC_HTTP_ADMINS
export const DAVE = 'dave-token-0123456789ab';
export const ERIN = 'erin-token-0123456789ab';

export interface AuditEntry {
  tool: string;
  principal: string;
  input_code: string;
  approved: boolean;
  approved_by: string | null;
  /** The dashboard's decider (absent when the client, a rule or trust decided). */
  decided_by?: string;
  exit_code: number | null;
}

export interface QueuedApproval {
  id: string;
  principal: string;
  /** run: may this code run; host: may the running code connect to host:port. */
  kind: 'run' | 'host';
  tool: string;
  code: string;
  session_id: string | null;
  host?: string;
  port?: number;
}

/**
 * serve --http asking every run, approvals answered by `approver`, `env` on top; `stop()` removes
 * its files.
 */
export async function startApprovalServer(
  approver: 'dashboard' | 'both',
  env: Record<string, string> = {},
): Promise<HttpServer> {
  const dir = tempDir();
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB, carol: CAROL, dave: DAVE, erin: ERIN }));
  const server = await startHttp({
    env: {
      CODEXEC_HTTP_TOKENS: tokens,
      CODEXEC_HTTP_ADMINS: 'carol',
      CODEXEC_APPROVAL: 'ask',
      CODEXEC_APPROVER: approver,
      CODEXEC_APPROVAL_TIMEOUT_MS: '30000',
      ...env,
    },
  });
  return {
    ...server,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(server.home, { recursive: true, force: true });
    },
  };
}

/** Every audit entry the server wrote, oldest first. */
export function auditOf(home: string): AuditEntry[] {
  const dir = join(home, 'logs');
  return readdirSync(dir)
    .filter((name) => /^audit-.*\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').trimEnd().split('\n'))
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditEntry);
}

/** The approvals `token`'s principal sees waiting (GET /api/approvals). */
export async function listed(base: string, token: string): Promise<QueuedApproval[]> {
  const response = await fetch(new URL('/api/approvals', base), {
    headers: { authorization: `Bearer ${token}` },
  });
  return ((await response.json()) as { approvals: QueuedApproval[] }).approvals;
}

/** POST a decision on approval `id` as `token`'s principal; the HTTP status. */
export async function decideAs(base: string, token: string, id: string, decision: string): Promise<number> {
  return (await postDecision(base, token, id, decision)).status;
}

/** POST a decision on approval `id` as `token`'s principal; the HTTP status and the JSON body. */
export async function postDecision(
  base: string,
  token: string,
  id: string,
  decision: string,
): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  const response = await fetch(new URL(`/api/approvals/${id}/${decision}`, base), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: response.status, body: (await response.json()) as never };
}

/** Wait until `token`'s principal sees an approval whose code contains `marker`. */
export async function waitListed(base: string, token: string, marker: string): Promise<QueuedApproval> {
  return waitFor(base, token, (approval) => approval.code.includes(marker), `an approval with ${marker}`);
}

/** Wait until `token`'s principal sees an approval that `matches` (`what` names it in the failure). */
export async function waitFor(
  base: string,
  token: string,
  matches: (approval: QueuedApproval) => boolean,
  what: string,
): Promise<QueuedApproval> {
  const until = Date.now() + 15_000;
  for (;;) {
    const found = (await listed(base, token)).find(matches);
    if (found) return found;
    if (Date.now() > until) throw new Error(`${what} was never listed`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
