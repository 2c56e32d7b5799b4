import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Config } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { startTracing } from '../traces/index.js';
import { log } from '../util/index.js';
import { IdleHeap } from './idle-heap.js';
import { TaskFeed, TaskListenTransport } from './listen/index.js';
import { createServer, VERSION } from './server.js';
import { closeRecords, createServices, stopWork } from './services.js';
import { FramedStdioTransport } from './transport/index.js';

const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * Serve MCP on stdin/stdout until the client closes stdin or a signal arrives. Start-up does no
 * I/O beyond reading config: clients spawn throwaway copies just to probe.
 */
export async function serve(config: Config): Promise<void> {
  // Refused, not downgraded to `client`: the operator chose who answers approvals, and quietly
  // letting the client (the model's side) answer instead would hand that decision elsewhere.
  if (config.gate.approver !== 'client') {
    throw new ConfigError(
      `CODEXEC_APPROVER=${config.gate.approver} needs serve --http (the dashboard answers approvals); ` +
        'over stdio only the client can be asked: set CODEXEC_APPROVER=client or serve --http',
    );
  }
  warnIfMessagesTooSmall(config);
  const tracing = await startTracing(process.env, VERSION);
  const services = await createServices(config, { tracing });
  services.history.startRetention(); // unref'd timers only: no I/O until they fire
  services.workspaces.start();
  let closing = false;
  const heap = new IdleHeap();
  return new Promise((resolve) => {
    const shutdown = async (why: string) => {
      if (closing) return;
      closing = true;
      heap.stop();
      log('debug', `shutting down (${why})`);
      // A backstop, not the plan (shutdown measured well under a second with runs, sessions and
      // an install in flight): a client that went away must never leave a server behind.
      setTimeout(() => {
        log('warn', `shutdown still unfinished after ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
        resolve();
      }, SHUTDOWN_DEADLINE_MS).unref();
      await handle.close().catch(() => {});
      await stopWork(services);
      await closeRecords(services);
      resolve();
    };
    const framed = new FramedStdioTransport({
      maxMessageBytes: config.maxMessageBytes,
      onInputEnd: () => void shutdown('stdin closed'),
      onActivity: () => heap.touch(),
    });
    // Listens for tasks are answered between the SDK's entry and the wire (it keeps no taskIds).
    const transport = new TaskListenTransport(framed, services.tasks, new TaskFeed(services.tasks));
    const handle = serveStdio(() => createServer(services, { stdio: true }), {
      transport,
      onerror: (error) => log('warn', `transport: ${error.message}`),
    });
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
  });
}

/**
 * Code is JSON-escaped inside its message: quotes and backslashes double, so a message limit
 * under twice the code limit refuses code the code limit allows (as a JSON-RPC error, not the
 * tool's INVALID_INPUT). Allowed, since the operator may mean it, but said.
 */
function warnIfMessagesTooSmall(config: Config): void {
  const needed = 2 * config.maxCodeBytes + 64 * 1024;
  if (config.maxMessageBytes >= needed) return;
  log(
    'warn',
    `CODEXEC_MAX_MESSAGE_BYTES (${config.maxMessageBytes}) is under twice CODEXEC_MAX_CODE_BYTES ` +
      `(${config.maxCodeBytes}): code near the code limit may be refused as a too-large message`,
  );
}
