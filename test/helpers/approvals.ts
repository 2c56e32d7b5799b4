// The dashboard's approval queue as tests see it: a serve --http with three principals (carol an
// admin) under CODEXEC_APPROVAL=ask, the audit entries it wrote, and the API as a principal.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type HttpServer, startHttp } from './http.js';
import { tempDir } from './server.js';

export const ALICE = 'alice-token-0123456789';
export const BOB = 'bob-token-0123456789ab';
export const CAROL = 'carol-token-0123456789'; // CODEXEC_HTTP_ADMINS

export interface AuditEntry {
  tool: string;
  principal: string;
  input_code: string;
  approved: boolean;
  approved_by: string | null;
  exit_code: number | null;
}

export interface QueuedApproval {
  id: string;
  principal: string;
  tool: string;
  code: string;
  session_id: string | null;
}

/** serve --http asking every run, approvals answered by `approver`; `stop()` removes its files. */
export async function startApprovalServer(approver: 'dashboard' | 'both'): Promise<HttpServer> {
  const dir = tempDir();
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB, carol: CAROL }));
  const server = await startHttp({
    env: {
      CODEXEC_HTTP_TOKENS: tokens,
      CODEXEC_HTTP_ADMINS: 'carol',
      CODEXEC_APPROVAL: 'ask',
      CODEXEC_APPROVER: approver,
      CODEXEC_APPROVAL_TIMEOUT_MS: '30000',
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
  const response = await fetch(new URL(`/api/approvals/${id}/${decision}`, base), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  await response.body?.cancel();
  return response.status;
}

/** Wait until `token`'s principal sees an approval whose code contains `marker`. */
export async function waitListed(base: string, token: string, marker: string): Promise<QueuedApproval> {
  const until = Date.now() + 15_000;
  for (;;) {
    const found = (await listed(base, token)).find((approval) => approval.code.includes(marker));
    if (found) return found;
    if (Date.now() > until) throw new Error(`no approval with ${marker} listed`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
