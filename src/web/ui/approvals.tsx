import { useState } from 'preact/hooks';
import { api } from './api.js';
import type { Approval } from './feed.js';

type Decision = 'approve' | 'deny' | 'approve_trust_session';

/**
 * The approvals waiting for this page (CODEXEC_APPROVER=dashboard or both): the choices of the
 * client's approval form (ADR 036), one card per run asked, oldest first. A card leaves when
 * anyone answers it (here, another tab, or the client first) or its call ends.
 */
export function Approvals({
  admin,
  approvals,
  connected,
}: {
  admin: boolean;
  approvals: ReadonlyMap<string, Approval>;
  connected: boolean;
}) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const decide = async (id: string, decision: Decision) => {
    setBusy(id);
    try {
      await api(`/api/approvals/${encodeURIComponent(id)}/${decision}`, { method: 'POST' });
      setError('');
    } catch (caught) {
      setError((caught as Error).message);
    } finally {
      setBusy(null);
    }
  };
  const list = [...approvals.values()].sort((a, b) => a.asked_at - b.asked_at);
  return (
    <section>
      <h2>
        Approvals <span class={connected ? 'live on' : 'live'}>{connected ? 'live' : 'reconnecting'}</span>
      </h2>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {list.length === 0 && (
        <p class="muted">Nothing waits for approval. Runs that ask appear here as their calls wait.</p>
      )}
      {list.map((approval) => (
        <article class="approval" key={approval.id} data-approval={approval.id}>
          <div class="meta">
            <b>{approval.tool}</b> {approval.language}
            {admin && <span class="tag">{approval.principal}</span>}
            <span class="tag">{approval.session_id ?? 'one-shot'}</span>
            <span class="muted">asked {new Date(approval.asked_at).toLocaleTimeString()}</span>
          </div>
          <p class="reason">Why: {approval.reason}</p>
          {approval.powers && <p class="reason">The code may also: {approval.powers}</p>}
          <pre class="approval-code">
            {approval.code}
            {approval.code_chars > approval.code.length &&
              `\n[... ${approval.code_chars - approval.code.length} more characters ...]`}
          </pre>
          <div class="actions">
            <button
              type="button"
              class="approve"
              disabled={busy !== null}
              onClick={() => decide(approval.id, 'approve')}
            >
              Approve
            </button>
            <button
              type="button"
              class="danger"
              disabled={busy !== null}
              onClick={() => decide(approval.id, 'deny')}
            >
              Deny
            </button>
            <button
              type="button"
              disabled={busy !== null}
              title={
                approval.session_id
                  ? `Run it, and every later run in session ${approval.session_id} unasked`
                  : `Run it, and later ${approval.tool} ${approval.language} runs of ${approval.principal} unasked`
              }
              onClick={() => decide(approval.id, 'approve_trust_session')}
            >
              Approve &amp; Trust Session
            </button>
          </div>
        </article>
      ))}
    </section>
  );
}
