// The page's side of /api: the token from sessionStorage on every call, SSE read off fetch
// (EventSource cannot send an Authorization header).

const KEY = 'codexec.token';

export const token = {
  get: (): string | null => sessionStorage.getItem(KEY),
  set: (value: string) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

/** Who signed in, as /api/me answers. */
export interface Me {
  readonly principal: string;
  readonly admin: boolean;
  /** In CODEXEC_HTTP_APPROVERS: decides other principals' approvals. */
  readonly approver: boolean;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Call the API as the signed-in principal; a refusal throws ApiError with the server's sentence. */
export async function api<T>(path: string, init: RequestInit = {}, bearer = token.get()): Promise<T> {
  const response = await fetch(path, {
    ...init,
    headers: { authorization: `Bearer ${bearer ?? ''}`, ...init.headers },
  });
  const body = (await response.json().catch(() => ({}))) as {
    error?: { message?: string };
  };
  if (!response.ok) throw new ApiError(response.status, body.error?.message ?? `HTTP ${response.status}`);
  return body as T;
}

/**
 * Follow /api/events until `signal` aborts, calling `onEvent` for each event; reconnects after a
 * second when the stream ends (a snapshot comes first each time, so nothing is missed).
 */
export async function follow(
  onEvent: (type: string, data: unknown) => void,
  onState: (connected: boolean) => void,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const response = await fetch('/api/events', {
        headers: { authorization: `Bearer ${token.get() ?? ''}` },
        signal,
      });
      if (!response.ok || !response.body) throw new ApiError(response.status, 'events refused');
      onState(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          dispatch(buffer.slice(0, end), onEvent);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // aborted, or the server went away: retry below unless aborted
    }
    onState(false);
    if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function dispatch(block: string, onEvent: (type: string, data: unknown) => void): void {
  let type = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) type = line.slice(7);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (data !== '') onEvent(type, JSON.parse(data));
}
