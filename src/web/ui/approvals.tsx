import { useState } from 'preact/hooks';
import { api, type Me } from './api.js';
import type { Approval } from './feed.js';

type Decision = 'approve' | 'deny' | 'approve_trust_session';

/**
 * The approvals waiting for this page (CODEXEC_APPROVER=dashboard or both): the choices of the
 * client's approval form, one card per question (code to run, a host to reach), oldest
 * first. An approver (CODEXEC_HTTP_APPROVERS) decides other principals' cards; everyone else, and
 * an approver on its own call's card, sees it wait. A card leaves when anyone answers it (here,
 * another tab, or the client first) or its call ends.
 */
export function Approvals({
  me,
  approvals,
  connected,
}: {
  me: Me;
  approvals: ReadonlyMap<string, Approval>;
  connected: boolean;
}) {
  const everyone = me.admin || me.approver;
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
        <Card key={approval.id} approval={approval} me={me} everyone={everyone} busy={busy} decide={decide} />
      ))}
    </section>
  );
}

/** One question waiting: what asks, and the choices, or who else decides it. */
function Card({
  approval,
  me,
  everyone,
  busy,
  decide,
}: {
  approval: Approval;
  me: Me;
  everyone: boolean;
  busy: string | null;
  decide: (id: string, decision: Decision) => Promise<void>;
}) {
  return (
    <article class="approval" data-approval={approval.id}>
      <div class="meta">
        <b>{approval.tool}</b> {approval.kind === 'host' ? 'network' : approval.language}
        {everyone && <span class="tag">{approval.principal}</span>}
        <span class="tag">{approval.session_id ?? 'one-shot'}</span>
        <span class="muted">asked {new Date(approval.asked_at).toLocaleTimeString()}</span>
      </div>
      <p class="reason">Why: {approval.reason}</p>
      {approval.place && <p class="reason">Runs in: {approval.place}</p>}
      {approval.powers && <p class="reason">The code may also: {approval.powers}</p>}
      {approval.kind === 'host' ? (
        <p class="approval-host">
          Connect to <code>{`${approval.host}:${approval.port}`}</code>
        </p>
      ) : (
        <pre class="approval-code">
          {approval.code}
          {approval.code_chars > approval.code.length &&
            `\n[... ${approval.code_chars - approval.code.length} more characters ...]`}
        </pre>
      )}
      {!me.approver || approval.principal === me.principal ? (
        <p class="muted waits">
          {me.approver
            ? 'Your own call: another approver decides it.'
            : 'Waits for an approver (CODEXEC_HTTP_APPROVERS) to decide.'}
        </p>
      ) : (
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
            title={trustTitle(approval)}
            onClick={() => decide(approval.id, 'approve_trust_session')}
          >
            Approve &amp; Trust Session
          </button>
        </div>
      )}
    </article>
  );
}

/**
 * What "trust" lets through from then on, for this card. The dashboard is serve --http's, where
 * trust outside a session is the principal's: every connection of it, until the server stops.
 */
function trustTitle(approval: Approval): string {
  if (approval.kind === 'host') {
    const target = `${approval.host}:${approval.port}`;
    return approval.session_id
      ? `Allow ${target}, and later connections to it in session ${approval.session_id} unasked`
      : `Allow ${target}, and later connections to it from ${approval.principal}'s ${approval.tool} calls on every connection, until the server stops, unasked`;
  }
  return approval.session_id
    ? `Run it, and every later run in session ${approval.session_id} unasked`
    : `Run it, and later ${approval.tool} ${approval.language} runs of ${approval.principal} on every connection, until the server stops, unasked`;
}
