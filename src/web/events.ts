import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApprovalEvent, ApprovalQueue } from '../approvals/index.js';
import type { FeedEvent, RunFeed } from '../server/index.js';

/** A watcher further behind than this is cut off; its page reconnects and starts from a snapshot. */
const MAX_BUFFERED_BYTES = 1_000_000;
const HEARTBEAT_MS = 15_000;

/**
 * Server-Sent Events of the run feed and the approval queue: first a `snapshot` (the runs the
 * caller may see, with their output so far, and the approvals waiting it may see), then every
 * `run`, `output`, `approval` and `approval_gone` event as it happens. Each scope is a principal
 * whose own are shown, or undefined for everyone's (an admin's runs; an admin's or an approver's
 * approvals).
 */
export function streamEvents(
  req: IncomingMessage,
  res: ServerResponse,
  { feed, approvals }: { readonly feed: RunFeed; readonly approvals: ApprovalQueue },
  scope: { readonly runs: string | undefined; readonly approvals: string | undefined },
): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  const send = (type: string, data: unknown) => {
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      res.destroy(); // a slow page costs bounded memory: it reconnects and gets a snapshot
      return;
    }
    res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  send('snapshot', { runs: feed.list(scope.runs), approvals: approvals.list(scope.approvals) });
  const unwatch = [
    feed.watch(scope.runs, (event: FeedEvent) => send(event.type, event)),
    approvals.watch(scope.approvals, (event: ApprovalEvent) => send(event.type, event)),
  ];
  const stop = () => {
    for (const off of unwatch) off();
  };
  const heartbeat = setInterval(() => res.write(': ping\n\n'), HEARTBEAT_MS);
  const end = () => {
    clearInterval(heartbeat);
    stop();
  };
  req.once('close', end);
  res.once('close', end);
}
