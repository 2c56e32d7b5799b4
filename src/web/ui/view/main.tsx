// codexec's MCP Apps view: a run's approval while its call waits on one, then its result. One
// view for both, as a tool links one ui:// resource and both belong to the same call.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Waiting } from './approval.js';
import { app, connect, followHostStyle, type ToolResult } from './host.js';
import { Result } from './result.js';

interface Seen {
  readonly input?: Record<string, unknown>;
  readonly result?: ToolResult;
  readonly cancelled?: string;
  readonly failed?: string;
  readonly tool?: string;
}

function View() {
  const [seen, setSeen] = useState<Seen>({});
  useEffect(() => {
    app.ontoolinput = ({ arguments: input }) => setSeen((before) => ({ ...before, input: input ?? {} }));
    app.ontoolresult = (result) => setSeen((before) => ({ ...before, result: result as ToolResult }));
    app.ontoolcancelled = ({ reason }) =>
      setSeen((before) => ({ ...before, cancelled: reason ?? 'the call was cancelled' }));
    connect()
      .then(() => {
        followHostStyle();
        const tool = app.getHostContext()?.toolInfo?.tool.name;
        if (tool) setSeen((before) => ({ ...before, tool }));
      })
      .catch((error: Error) => setSeen((before) => ({ ...before, failed: error.message })));
  }, []);
  if (seen.result) return <Result result={seen.result} />;
  if (seen.cancelled) return <p class="muted">Cancelled: {seen.cancelled}</p>;
  if (seen.failed) return <p class="muted">Not connected to the host: {seen.failed}</p>;
  if (seen.input) return <Waiting input={seen.input} tool={seen.tool} />;
  return <p class="muted">Waiting for the call…</p>;
}

const root = document.getElementById('root');
if (root) render(<View />, root);
