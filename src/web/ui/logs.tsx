import { useState } from 'preact/hooks';
import { api } from './api.js';

interface Result {
  execution_id: string;
  session_id: string | null;
  language: string | null;
  code_preview: string;
  status: string;
  exit_code: number | null;
  duration_ms: number;
  executed_at: string;
}

const LANGUAGES = ['', 'python', 'node', 'typescript', 'bash'];
const STATUSES = ['', 'success', 'failed', 'timeout'];

/** search_execution_logs from the browser: the same filters, the same principal scope. */
export function Logs() {
  const [query, setQuery] = useState('');
  const [language, setLanguage] = useState('');
  const [status, setStatus] = useState('');
  const [page, setPage] = useState<{ results: Result[]; total_count: number } | null>(null);
  const [error, setError] = useState('');
  const search = async (event: Event) => {
    event.preventDefault();
    const params = new URLSearchParams({ query, language, status, limit: '50' });
    try {
      setPage(await api(`/api/logs?${params}`));
      setError('');
    } catch (caught) {
      setError((caught as Error).message);
    }
  };
  return (
    <section>
      <h2>Log search</h2>
      <form class="search" onSubmit={search}>
        <input
          type="search"
          name="query"
          placeholder="words in code or output"
          value={query}
          onInput={(event) => setQuery(event.currentTarget.value)}
        />
        <Choice name="language" options={LANGUAGES} value={language} onChange={setLanguage} />
        <Choice name="status" options={STATUSES} value={status} onChange={setStatus} />
        <button type="submit">Search</button>
      </form>
      {error && <p class="error">{error}</p>}
      {page && (
        <>
          <p class="muted">{page.total_count} match(es)</p>
          <table>
            <tbody>
              {page.results.map((result) => (
                <tr key={result.execution_id} data-execution={result.execution_id}>
                  <td>{new Date(result.executed_at).toLocaleString()}</td>
                  <td>{result.language}</td>
                  <td class={result.status}>{result.status}</td>
                  <td>{result.duration_ms} ms</td>
                  <td>
                    <code>{result.code_preview}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function Choice(props: {
  name: string;
  options: string[];
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <select
      name={props.name}
      value={props.value}
      onChange={(event) => props.onChange(event.currentTarget.value)}
    >
      {props.options.map((option) => (
        <option key={option} value={option}>
          {option || `any ${props.name}`}
        </option>
      ))}
    </select>
  );
}
