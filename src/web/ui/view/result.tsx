// A run's result: whether it worked, its error and traceback when it did not, its output (with
// the whole of a cut stream on request), the tables in its output, its pictures and its files.
// Everything the code printed is text in the page, never markup; a picture is shown only as a
// data: URI of a type the server makes.
import { useState } from 'preact/hooks';
import { type Block, callTool, type ToolResult } from './host.js';
import { type Saved, Stream } from './output.js';
import { type Table, tablesIn } from './table.js';

interface Run {
  readonly success?: boolean;
  readonly error?: string;
  readonly code?: string;
  readonly execution_id?: string;
  readonly language?: string;
  readonly stdout?: string;
  readonly stderr?: string;
  readonly exit_code?: number | null;
  readonly duration_ms?: number;
  readonly timed_out?: boolean;
  readonly truncated?: boolean;
  readonly artifacts?: readonly string[];
  readonly output_saved?: { readonly stdout?: Saved; readonly stderr?: Saved };
}

const PICTURES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function pictureSrc(block: Block): string | undefined {
  if (block.type !== 'image' || !block.mimeType || !PICTURES.has(block.mimeType)) return undefined;
  if (!block.data || !BASE64.test(block.data)) return undefined;
  return `data:${block.mimeType};base64,${block.data}`;
}

export function Result({ result }: { result: ToolResult }) {
  const run = (result.structuredContent ?? {}) as Run;
  if (result.isError) {
    return (
      <section class="refused" role="alert">
        <h2>Refused{run.code ? ` (${run.code})` : ''}</h2>
        <p>{run.error ?? textOf(result)}</p>
      </section>
    );
  }
  const failed = run.success === false;
  const pictures = (result.content ?? []).flatMap((block) => pictureSrc(block) ?? []);
  const tables = tablesIn(run.stdout ?? '');
  return (
    <article class={failed ? 'run failed' : 'run'}>
      <header>
        <strong>{failed ? 'Failed' : 'Done'}</strong>
        {run.language && <span>{run.language}</span>}
        {run.exit_code !== undefined && <span>exit {run.exit_code ?? '—'}</span>}
        {run.duration_ms !== undefined && <span>{run.duration_ms} ms</span>}
        {run.timed_out && <span class="warn">timed out</span>}
        {run.truncated && <span class="warn">output cut</span>}
      </header>
      {failed && run.stderr && (
        <Stream
          name="stderr"
          text={run.stderr}
          saved={run.output_saved?.stderr}
          executionId={run.execution_id}
          failed
        />
      )}
      <Stream
        name="stdout"
        text={run.stdout ?? ''}
        saved={run.output_saved?.stdout}
        executionId={run.execution_id}
      />
      {!failed && run.stderr && (
        <Stream
          name="stderr"
          text={run.stderr}
          saved={run.output_saved?.stderr}
          executionId={run.execution_id}
        />
      )}
      {tables.map((table, index) => (
        <TableView key={index} table={table} />
      ))}
      {pictures.map((src, index) => (
        <img key={index} class="picture" src={src} alt={`figure ${index + 1} of the run`} />
      ))}
      {run.execution_id && (run.artifacts?.length ?? 0) > 0 && (
        <Files executionId={run.execution_id} names={run.artifacts ?? []} />
      )}
    </article>
  );
}

function textOf(result: ToolResult): string {
  return (result.content ?? [])
    .flatMap((block) => (block.type === 'text' ? (block.text ?? '') : []))
    .join('\n');
}

function TableView({ table }: { table: Table }) {
  return (
    <div class="table">
      <table>
        <thead>
          <tr>
            {table.header.map((cell, index) => (
              <th key={index}>{cell}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {table.rows.map((row, index) => (
            <tr key={index}>
              {row.map((cell, column) => (
                <td key={column}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The run's files, each opened on request as text (read_file, as the model would read it). */
function Files({ executionId, names }: { executionId: string; names: readonly string[] }) {
  const [open, setOpen] = useState<{ name: string; text: string } | undefined>();
  const show = async (name: string) => {
    try {
      const file = await callTool<{ content: string }>('read_file', {
        execution_id: executionId,
        path: name,
      });
      setOpen({ name, text: file.content });
    } catch (error) {
      setOpen({ name, text: (error as Error).message });
    }
  };
  return (
    <section class="files" aria-label="files">
      <h3>Files</h3>
      <ul>
        {names.map((name) => (
          <li key={name}>
            <button type="button" class="link" onClick={() => void show(name)}>
              {name}
            </button>
          </li>
        ))}
      </ul>
      {open && (
        <figure>
          <figcaption>{open.name}</figcaption>
          <pre>{open.text}</pre>
        </figure>
      )}
    </section>
  );
}
