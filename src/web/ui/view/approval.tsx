// The approval the call waits on, as the client is asked it: what would run, where, why it asks;
// approve, deny or trust answer it through answer_approval, the client's own path (the host's
// approval form, if it shows one too, is withdrawn by the first answer).
import { useEffect, useState } from 'preact/hooks';
import { callTool } from './host.js';

export interface Approval {
  readonly id: string;
  readonly tool: string;
  readonly language: string | null;
  readonly session_id: string | null;
  readonly code: string;
  readonly code_chars: number;
  readonly powers: string | null;
  readonly place?: string | null;
  readonly reason: string;
  readonly trust: string;
}

const POLL_MS = 700;
type Decision = 'approve' | 'deny' | 'approve_trust_session';

/** The code or command line the call was given, to find its approval among the client's. */
function askedText(input: Record<string, unknown>): string | undefined {
  for (const key of ['code', 'command']) if (typeof input[key] === 'string') return input[key] as string;
  return undefined;
}

/** This call's approval: its tool's, with its code when the arguments carry it; the oldest such. */
export function mine(approvals: readonly Approval[], input: Record<string, unknown>, tool?: string) {
  const text = askedText(input);
  return approvals.find(
    (approval) =>
      (tool === undefined || approval.tool === tool) &&
      (text === undefined || (approval.code_chars === text.length && text.startsWith(approval.code))),
  );
}

export function Waiting({ input, tool }: { input: Record<string, unknown>; tool?: string | undefined }) {
  const [approval, setApproval] = useState<Approval | undefined>();
  const [answered, setAnswered] = useState<Decision | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  useEffect(() => {
    if (answered) return;
    let stopped = false;
    const look = async () => {
      try {
        const { approvals } = await callTool<{ approvals: Approval[] }>('answer_approval', {});
        if (!stopped) setApproval(mine(approvals, input, tool));
      } catch {
        stopped = true; // a host that does not pass the call on: the host's own form asks
      }
      if (!stopped) timer = setTimeout(look, POLL_MS);
    };
    let timer = setTimeout(look, 0);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [input, tool, answered]);
  const answer = async (decision: Decision) => {
    if (!approval) return;
    setAnswered(decision);
    try {
      await callTool('answer_approval', { id: approval.id, decision });
    } catch (error) {
      setAnswered(undefined);
      setProblem((error as Error).message);
    }
  };
  if (answered)
    return <p class="status">{answered === 'deny' ? 'Denied: nothing runs.' : 'Approved: running…'}</p>;
  if (!approval) return <p class="muted">Running…</p>;
  return <Question approval={approval} answer={answer} problem={problem} />;
}

function Question(props: { approval: Approval; answer: (d: Decision) => void; problem: string | undefined }) {
  const { approval, answer, problem } = props;
  const cut = approval.code_chars - approval.code.length;
  return (
    <section class="approval" aria-label="Approval">
      <h2>Run this {approval.language ?? ''} code?</h2>
      <dl>
        <dt>Tool</dt>
        <dd>{approval.tool}</dd>
        <dt>Language</dt>
        <dd>{approval.language ?? '—'}</dd>
        {approval.session_id && <dt>Session</dt>}
        {approval.session_id && <dd>{approval.session_id}</dd>}
        {approval.place && <dt>Runs in</dt>}
        {approval.place && <dd>{approval.place}</dd>}
        {approval.powers && <dt>May also</dt>}
        {approval.powers && <dd>{approval.powers}</dd>}
        <dt>Why you are asked</dt>
        <dd class="reason">{approval.reason}</dd>
      </dl>
      <pre class="code">{approval.code}</pre>
      {cut > 0 && <p class="muted">… and {cut} more characters</p>}
      <div class="buttons">
        <button type="button" class="approve" onClick={() => answer('approve')}>
          Approve
        </button>
        <button type="button" class="deny" onClick={() => answer('deny')}>
          Deny
        </button>
        <button
          type="button"
          class="trust"
          title={approval.trust}
          onClick={() => answer('approve_trust_session')}
        >
          Approve and trust
        </button>
      </div>
      <p class="muted">Trust: {approval.trust}</p>
      {problem && <p role="alert">{problem}</p>}
    </section>
  );
}
