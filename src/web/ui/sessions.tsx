import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from './api.js';

interface Session {
  session_id: string;
  principal: string | null;
  language: string;
  name: string | null;
  started_at: string;
  executions_count: number;
  memory_mb: number | null;
  busy: boolean;
}

/** The principal's live REPL sessions (an admin's: everyone's), with Close and Kill. */
export function Sessions({ admin }: { admin: boolean }) {
  const [sessions, setSessions] = useState<Session[] | null>(null);
  const [error, setError] = useState('');
  const load = useCallback(() => {
    api<{ sessions: Session[] }>('/api/sessions')
      .then((body) => setSessions(body.sessions))
      .catch((caught: Error) => setError(caught.message));
  }, []);
  useEffect(() => {
    load();
    const timer = setInterval(load, 3000);
    return () => clearInterval(timer);
  }, [load]);
  const end = async (id: string, how: 'close' | 'kill') => {
    try {
      await api(`/api/sessions/${encodeURIComponent(id)}/${how}`, { method: 'POST' });
      setError('');
    } catch (caught) {
      setError((caught as Error).message);
    }
    load();
  };
  if (sessions === null) return <p class="muted">Loading sessions…</p>;
  return (
    <section>
      <h2>Sessions</h2>
      {error && <p class="error">{error}</p>}
      {sessions.length === 0 ? (
        <p class="muted">No live sessions.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Session</th>
              {admin && <th>Principal</th>}
              <th>Language</th>
              <th>Started</th>
              <th>Sends</th>
              <th>Memory</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => (
              <tr key={session.session_id} data-session={session.session_id}>
                <td>
                  <code>{session.session_id}</code> {session.name}
                  {session.busy && <span class="tag">busy</span>}
                </td>
                {admin && <td>{session.principal ?? '–'}</td>}
                <td>{session.language}</td>
                <td>{new Date(session.started_at).toLocaleTimeString()}</td>
                <td>{session.executions_count}</td>
                <td>{session.memory_mb === null ? '–' : `${session.memory_mb} MB`}</td>
                <td class="actions">
                  <button type="button" onClick={() => end(session.session_id, 'close')}>
                    Close
                  </button>
                  <button type="button" class="danger" onClick={() => end(session.session_id, 'kill')}>
                    Kill
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
