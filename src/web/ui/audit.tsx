import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';

interface Entry {
  at: string;
  principal: string | null;
  tool: string;
  runtime: string;
  input_code: string;
  exit_code: number | null;
  approved: boolean;
  approved_by: string | null;
  /** The dashboard's approver, when one decided. */
  decided_by?: string;
  rule: string | null;
}

/** The files' report (one chain), or a postgres store's (`chains`: one per replica). */
interface Report {
  ok: boolean;
  files?: number;
  chains?: unknown[];
  entries: number;
  bad?: { file?: string; line?: number; chain?: string; seq?: number; reason: string };
}

const where = (bad: NonNullable<Report['bad']>) =>
  bad.chain !== undefined ? `chain ${bad.chain} seq ${bad.seq}` : `${bad.file}:${bad.line}`;

/** The newest audit entries (an admin's: everyone's), and for admins `audit verify`. */
export function Audit({ admin }: { admin: boolean }) {
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [report, setReport] = useState<Report | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api<{ entries: Entry[] }>('/api/audit')
      .then((body) => setEntries(body.entries))
      .catch((caught: Error) => setError(caught.message));
  }, []);
  const verify = async () => {
    try {
      setReport(await api<Report>('/api/audit/verify', { method: 'POST' }));
    } catch (caught) {
      setError((caught as Error).message);
    }
  };
  return (
    <section>
      <h2>Audit trail</h2>
      {admin && (
        <p class="verify">
          <button type="button" onClick={verify}>
            Verify the chain
          </button>
          {report &&
            (report.ok ? (
              <span class="ok" data-verified="ok">
                {report.chains
                  ? `Chains intact: ${report.entries} entries in ${report.chains.length} chain(s).`
                  : `Chain intact: ${report.entries} entries in ${report.files} file(s).`}
              </span>
            ) : (
              <span class="error" data-verified="broken">
                Chain broken at {report.bad && where(report.bad)}: {report.bad?.reason}
              </span>
            ))}
        </p>
      )}
      {error && <p class="error">{error}</p>}
      {entries?.length === 0 && <p class="muted">No audit entries today.</p>}
      {entries && entries.length > 0 && (
        <table>
          <tbody>
            {entries.map((entry) => (
              <tr key={`${entry.at}${entry.input_code}`} data-audit>
                <td>{new Date(entry.at).toLocaleTimeString()}</td>
                {admin && <td>{entry.principal ?? '–'}</td>}
                <td>
                  {entry.tool} {entry.runtime}
                </td>
                <td class={entry.approved ? 'success' : 'failed'}>
                  {entry.approved
                    ? `allowed (${entry.approved_by ?? 'policy'}${entry.decided_by ? `: ${entry.decided_by}` : ''})`
                    : `refused (${entry.decided_by ? `dashboard: ${entry.decided_by}` : (entry.rule ?? '–')})`}
                </td>
                <td>{entry.exit_code ?? ''}</td>
                <td>
                  <code>{entry.input_code.split('\n', 1)[0]}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
