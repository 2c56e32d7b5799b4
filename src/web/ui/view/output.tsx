// One stream of a run (stdout or stderr) as the result has it, head and tail when it was cut, and
// the whole of it on request, page by page, from the output the server kept (read_file).
import { useState } from 'preact/hooks';
import { callTool } from './host.js';

export interface Saved {
  readonly bytes: number;
  readonly partial: boolean;
}

interface Slice {
  readonly content: string;
  readonly next_offset?: number | null;
  readonly total_bytes?: number;
}

export function Stream(props: {
  name: 'stdout' | 'stderr';
  text: string;
  saved?: Saved | undefined;
  executionId?: string | undefined;
  failed?: boolean;
}) {
  const { name, text, saved, executionId } = props;
  const [whole, setWhole] = useState<{ text: string; next: number | null } | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [loading, setLoading] = useState(false);
  if (text === '' && !saved) return null;
  const more = async (offset: number) => {
    if (!executionId) return;
    setLoading(true);
    try {
      const slice = await callTool<Slice>('read_file', { execution_id: executionId, path: name, offset });
      setWhole((before) => ({
        text: (offset === 0 ? '' : (before?.text ?? '')) + slice.content,
        next: slice.next_offset ?? null,
      }));
    } catch (error) {
      setProblem((error as Error).message);
    } finally {
      setLoading(false);
    }
  };
  const shown = whole?.text ?? text;
  return (
    <section class={`stream ${name}${props.failed ? ' failed' : ''}`} aria-label={name}>
      <h3>
        {name} <span class="muted">{lineCount(shown)} lines</span>
      </h3>
      <pre>{shown}</pre>
      {saved && executionId && !whole && (
        <button type="button" disabled={loading} onClick={() => more(0)}>
          Show all {saved.bytes.toLocaleString('en-US')} bytes{saved.partial ? ' kept' : ''}
        </button>
      )}
      {whole && whole.next !== null && (
        <button type="button" disabled={loading} onClick={() => more(whole.next ?? 0)}>
          Load more
        </button>
      )}
      {problem && <p role="alert">{problem}</p>}
    </section>
  );
}

function lineCount(text: string): number {
  if (text === '') return 0;
  let lines = 1;
  for (let at = text.indexOf('\n'); at !== -1 && at < text.length - 1; at = text.indexOf('\n', at + 1))
    lines++;
  return lines;
}
