// Who may answer a question a run raises, when the dashboard answers (CODEXEC_APPROVER=dashboard):
// every question — code, write_file, a network host — waits for the page, never for the client
// that made the call; only the principals in CODEXEC_HTTP_APPROVERS decide, never the one whose
// call waits; the audit names the decider; and one principal's parked approvals leave room for
// another's (CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL).
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALICE,
  auditOf,
  BOB,
  CAROL,
  DAVE,
  ERIN,
  listed,
  postDecision,
  type QueuedApproval,
  startApprovalServer,
  waitFor,
  waitListed,
} from '../helpers/approvals.js';
import { eventually } from '../helpers/eventually.js';
import { connectHttp, type HttpServer } from '../helpers/http.js';
import { fetchCode, type Origin, origin } from '../helpers/origin.js';
import { callTool } from '../helpers/server.js';
import { overHttp, pollFor, pollUntilDone, type Reply, type Send } from '../helpers/tasks.js';

const accept = (decision: string) => ({ action: 'accept' as const, content: { decision } });
const structured = (reply: Reply) =>
  (reply.result?.result as { structuredContent: { stdout: string; network_denied?: unknown } } | undefined)
    ?.structuredContent ?? { stdout: 'null' };

describe('CODEXEC_APPROVER=dashboard with CODEXEC_HTTP_APPROVERS', () => {
  let server: HttpServer;
  let base: string;
  let target: Origin;
  const clients: Client[] = [];
  /** A client of `token` that cannot be asked (no elicitation): its calls wait for the page. */
  const mute = async (token: string) => {
    const made = await connectHttp(server.url, token, 'legacy');
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    target = await origin();
    server = await startApprovalServer('dashboard', {
      CODEXEC_HTTP_APPROVERS: 'dave,erin',
      CODEXEC_NETWORK: 'allowlist',
      CODEXEC_ALLOWED_DOMAINS: 'example.invalid',
      CODEXEC_MAX_PENDING_APPROVALS: '4',
      CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL: '2',
    });
    base = new URL('/', server.url).href;
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((made) => made.close().catch(() => {})));
    await server?.stop();
    target?.server.close();
  });

  it('the requester cannot decide its own approval: 403, and it stays pending', async () => {
    const alice = await mute(ALICE);
    const call = callTool<{ stdout: string }>(alice, 'execute_code', {
      language: 'bash',
      code: 'echo own-call-h3',
    });
    const { id } = await waitListed(base, ALICE, 'own-call-h3');
    for (const decision of ['approve', 'approve_trust_session', 'deny']) {
      const refused = await postDecision(base, ALICE, id, decision);
      expect(refused.status).toBe(403);
      expect(refused.body.error?.code).toBe('FORBIDDEN');
      expect(refused.body.error?.message).toContain('CODEXEC_HTTP_APPROVERS');
    }
    expect((await listed(base, DAVE)).map((approval) => approval.id)).toContain(id);
    expect((await postDecision(base, DAVE, id, 'deny')).status).toBe(200);
    expect((await call).value).toMatchObject({ code: 'APPROVAL_DENIED' });
  }, 60_000);

  it("an approver cannot decide its own call's approval; another approver can", async () => {
    const dave = await mute(DAVE);
    const call = callTool<{ stdout: string }>(dave, 'execute_code', {
      language: 'bash',
      code: 'echo approver-own-n6',
    });
    const { id } = await waitListed(base, DAVE, 'approver-own-n6');
    const refused = await postDecision(base, DAVE, id, 'approve');
    expect(refused.status).toBe(403);
    expect(refused.body.error?.message).toContain('whose call waits');
    // An admin who is no approver (CODEXEC_HTTP_APPROVERS=dave,erin) cannot either, nor anyone else.
    expect((await postDecision(base, CAROL, id, 'approve')).status).toBe(403);
    expect((await postDecision(base, BOB, id, 'approve')).status).toBe(403);
    expect((await listed(base, ERIN)).map((approval) => approval.id)).toEqual([id]);
    expect((await postDecision(base, ERIN, id, 'approve')).status).toBe(200);
    expect((await call).value.stdout).toBe('approver-own-n6\n');
    expect(
      auditOf(server.home).filter((entry) => entry.input_code.includes('approver-own-n6')),
    ).toMatchObject([{ principal: 'dave', approved_by: 'dashboard', decided_by: 'erin' }]);
  }, 60_000);

  it('a non-approver (an admin, another principal) cannot decide; an approver can and the audit names them', async () => {
    const alice = await mute(ALICE);
    const call = callTool<{ stdout: string }>(alice, 'execute_code', {
      language: 'bash',
      code: 'echo decided-by-dave-t4',
    });
    const { id } = await waitListed(base, CAROL, 'decided-by-dave-t4');
    const admin = await postDecision(base, CAROL, id, 'approve');
    expect(admin.status).toBe(403);
    expect(admin.body.error?.message).toContain('CODEXEC_HTTP_APPROVERS');
    expect((await postDecision(base, BOB, id, 'approve')).status).toBe(403);
    expect((await listed(base, DAVE)).map((approval) => approval.id)).toContain(id);
    expect((await postDecision(base, DAVE, id, 'approve')).status).toBe(200);
    expect((await call).value.stdout).toBe('decided-by-dave-t4\n');
    const entries = auditOf(server.home).filter((entry) => entry.input_code.includes('decided-by-dave-t4'));
    expect(entries).toMatchObject([
      { principal: 'alice', approved: true, approved_by: 'dashboard', decided_by: 'dave', exit_code: 0 },
    ]);
    // A denial names its decider too.
    const denied = callTool(alice, 'execute_code', { language: 'bash', code: 'echo denied-by-dave-t4' });
    const waiting = await waitListed(base, DAVE, 'denied-by-dave-t4');
    expect((await postDecision(base, DAVE, waiting.id, 'deny')).status).toBe(200);
    expect((await denied).value).toMatchObject({ code: 'APPROVAL_DENIED' });
    expect(
      auditOf(server.home).filter((entry) => entry.input_code.includes('denied-by-dave-t4')),
    ).toMatchObject([{ approved: false, approved_by: null, decided_by: 'dave' }]);
  }, 60_000);

  it('write_file asks the page, not a client that could answer itself', async () => {
    let asked = 0;
    const eliciting = await connectHttp(server.url, ALICE, 'modern', () => {
      asked++;
      return accept('approve');
    });
    clients.push(eliciting);
    const call = callTool(eliciting, 'write_file', {
      workspace: 'command',
      path: 'plan-w8.txt',
      content: 'written-w8\n',
    });
    const waiting = await waitFor(
      base,
      DAVE,
      (approval) => approval.tool === 'write_file' && approval.code.includes('plan-w8.txt'),
      'the write_file question',
    );
    expect((await postDecision(base, DAVE, waiting.id, 'approve')).status).toBe(200);
    expect((await call).value).toMatchObject({ success: true, bytes: 11 });
    expect(asked).toBe(0);
  }, 60_000);

  describe('a network host off the allowlist', () => {
    let send: Send;
    beforeAll(() => {
      send = overHttp(server.url, ALICE);
    });

    /** Start the fetch as a task, approve its code as dave; the host question as dave sees it. */
    async function fetchAsked(marker: string): Promise<{ taskId: string; host: QueuedApproval }> {
      const created = await send('tools/call', {
        name: 'execute_code',
        arguments: { language: 'python', code: fetchCode(target.port, marker) },
      });
      expect(created.result).toMatchObject({ resultType: 'task' });
      const taskId = created.result?.taskId as string;
      const code = await waitListed(base, DAVE, marker);
      expect((await postDecision(base, DAVE, code.id, 'approve')).status).toBe(200);
      const host = await waitFor(
        base,
        DAVE,
        (approval) => approval.kind === 'host' && approval.port === target.port,
        `the question for 127.0.0.1:${target.port}`,
      );
      expect(host).toMatchObject({ principal: 'alice', host: '127.0.0.1', tool: 'execute_code' });
      return { taskId, host };
    }

    it('is asked of the page, not the client: the client answering it reaches nothing', async () => {
      const before = target.accepted;
      const { taskId, host } = await fetchAsked('host-denied-b2');
      // The task never asked its client: no input request, least of all the host's.
      const status = (await send('tasks/get', { taskId })).result;
      expect(status?.status).toBe('working');
      expect(status?.inputRequests).toBeUndefined();
      // The client answers anyway, and tries the page as itself: neither lets the code through.
      const key = `egress:127.0.0.1:${target.port}`;
      await send('tasks/update', { taskId, inputResponses: { [key]: accept('approve_trust_session') } });
      expect((await postDecision(base, ALICE, host.id, 'approve')).status).toBe(403);
      expect((await listed(base, DAVE)).map((approval) => approval.id)).toContain(host.id);
      expect(target.accepted).toBe(before);
      expect((await postDecision(base, DAVE, host.id, 'deny')).status).toBe(200);
      const done = await pollUntilDone(send, taskId, 60_000);
      expect(done.result?.status).toBe('completed');
      const result = structured(done);
      expect(JSON.parse(result.stdout.trim())[0]).toBe(403);
      expect(result.network_denied).toEqual([{ host: '127.0.0.1', port: target.port }]);
      expect(target.accepted).toBe(before);
    }, 90_000);

    it('approved by an approver in the page, the run reaches it', async () => {
      const before = target.accepted;
      const { taskId, host } = await fetchAsked('host-approved-b2');
      expect((await postDecision(base, DAVE, host.id, 'approve')).status).toBe(200);
      const done = await pollFor(send, taskId, (reply) => reply.result?.status === 'completed', 60_000);
      expect(JSON.parse(structured(done).stdout.trim())).toEqual([200, 'hello']);
      expect(target.accepted).toBe(before + 1);
    }, 90_000);
  });

  it("one principal's parked approvals do not refuse another's (per-principal bound)", async () => {
    const alice = await mute(ALICE);
    const refusals: Record<string, unknown>[] = [];
    const calls = Array.from({ length: 4 }, (_, i) =>
      callTool<Record<string, unknown>>(alice, 'execute_code', {
        language: 'bash',
        code: `echo parked-${i}-p5`,
      }).then((call) => {
        if (call.value.code === 'LIMIT_REACHED') refusals.push(call.value);
        return call;
      }),
    );
    // Two wait (alice's share); the other two are refused at once, naming the setting.
    expect(await eventually(() => refusals.length === 2)).toBe(true);
    for (const value of refusals) {
      expect(value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
      expect(String(value.error)).toContain('CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL');
    }
    const parked = (await listed(base, DAVE)).filter((approval) => approval.code.includes('-p5'));
    expect(parked).toHaveLength(2);
    // Bob's call still waits to be asked, and runs once decided.
    const bob = await mute(BOB);
    const bobs = callTool<{ stdout: string }>(bob, 'execute_code', {
      language: 'bash',
      code: 'echo bob-runs-p5',
    });
    const waiting = await waitListed(base, DAVE, 'bob-runs-p5');
    expect((await postDecision(base, DAVE, waiting.id, 'approve')).status).toBe(200);
    expect((await bobs).value.stdout).toBe('bob-runs-p5\n');
    for (const approval of parked)
      expect((await postDecision(base, DAVE, approval.id, 'deny')).status).toBe(200);
    const ended = (await Promise.all(calls)).map((call) => call.value.code).sort();
    expect(ended).toEqual(['APPROVAL_DENIED', 'APPROVAL_DENIED', 'LIMIT_REACHED', 'LIMIT_REACHED']);
  }, 60_000);
});
