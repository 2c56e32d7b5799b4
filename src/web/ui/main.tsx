// The dashboard page: sign in with a bearer token, then the views, each over /api as that principal.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, type Me, token } from './api.js';
import { Approvals } from './approvals.js';
import { Audit } from './audit.js';
import { useFeed } from './feed.js';
import { Health } from './health.js';
import { Logs } from './logs.js';
import { Runs } from './runs.js';
import { Sessions } from './sessions.js';

const VIEWS = {
  runs: 'Live runs',
  approvals: 'Approvals',
  sessions: 'Sessions',
  logs: 'Log search',
  audit: 'Audit',
  health: 'Health',
} as const;
type View = keyof typeof VIEWS;

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [checking, setChecking] = useState(token.get() !== null);
  useEffect(() => {
    if (token.get() === null) return;
    api<Me>('/api/me')
      .then(setMe)
      .catch(() => token.clear())
      .finally(() => setChecking(false));
  }, []);
  if (checking) return <p class="muted">Checking your token…</p>;
  if (!me) return <SignIn onIn={setMe} />;
  return (
    <Shell
      me={me}
      onOut={() => {
        token.clear();
        setMe(null);
      }}
    />
  );
}

function SignIn({ onIn }: { onIn: (me: Me) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState('');
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      const me = await api<Me>('/api/me', {}, value.trim());
      token.set(value.trim());
      onIn(me);
    } catch (caught) {
      setError(
        caught instanceof ApiError && caught.status === 401 ? 'That token was refused.' : String(caught),
      );
    }
  };
  return (
    <form class="signin" onSubmit={submit}>
      <h1>codexec</h1>
      <label>
        Bearer token
        <input
          type="password"
          name="token"
          autocomplete="off"
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
      </label>
      <button type="submit">Sign in</button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="muted">Kept in this tab only (sessionStorage); the token file is CODEXEC_HTTP_TOKENS.</p>
    </form>
  );
}

function Shell({ me, onOut }: { me: Me; onOut: () => void }) {
  const [view, setView] = useState<View>('runs');
  const feed = useFeed();
  const pending = feed.approvals.size;
  return (
    <div class="shell">
      <header>
        <strong>codexec</strong>
        <nav>
          {(Object.keys(VIEWS) as View[]).map((name) => (
            <button
              type="button"
              key={name}
              data-view={name}
              class={name === view ? 'on' : ''}
              onClick={() => setView(name)}
            >
              {VIEWS[name]}
              {name === 'approvals' && pending > 0 && (
                <span class="badge" data-pending={pending}>
                  {pending}
                </span>
              )}
            </button>
          ))}
        </nav>
        <span class="who" data-principal={me.principal}>
          {me.principal}
          {me.admin && <em> admin</em>}
          {me.approver && <em> approver</em>}
        </span>
        <button type="button" onClick={onOut}>
          Sign out
        </button>
      </header>
      <main>
        {view === 'runs' && <Runs admin={me.admin} runs={feed.runs} connected={feed.connected} />}
        {view === 'approvals' && <Approvals me={me} approvals={feed.approvals} connected={feed.connected} />}
        {view === 'sessions' && <Sessions admin={me.admin} />}
        {view === 'logs' && <Logs />}
        {view === 'audit' && <Audit admin={me.admin} />}
        {view === 'health' && <Health />}
      </main>
    </div>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
