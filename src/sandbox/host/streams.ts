import type { Stream } from 'node:stream';

/**
 * stdio pipes are socket pairs: when a sandboxed process dies (killed, crashed, limit hit) a
 * write to it fails with EPIPE and a read may fail with ECONNRESET. The process's exit reports
 * what happened; an unhandled 'error' event would instead take the whole server down.
 */
export function ignoreStreamErrors(child: {
  readonly stdio: ReadonlyArray<Stream | null | undefined>;
}): void {
  for (const stream of child.stdio) stream?.on('error', () => {});
}
