import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Config } from '../config/index.js';
import { log } from '../util/index.js';
import { createServer } from './server.js';
import { createServices } from './services.js';

/**
 * Serve MCP on stdin/stdout until the client closes stdin or a signal arrives. Start-up does no
 * I/O beyond reading config: clients spawn throwaway copies just to probe.
 */
export function serve(config: Config): Promise<void> {
  const services = createServices(config);
  services.history.startRetention(); // unref'd timers only: no I/O until they fire
  let closing = false;
  return new Promise((resolve) => {
    const shutdown = async (why: string) => {
      if (closing) return;
      closing = true;
      log('debug', `shutting down (${why})`);
      await handle.close().catch(() => {});
      await services.sessions.shutdown();
      await services.engine.shutdown();
      await services.logs.flush();
      await services.history.close();
      resolve();
    };
    const handle = serveStdio(() => createServer(services), {
      onerror: (error) => log('warn', `transport: ${error.message}`),
    });
    process.stdin.once('end', () => void shutdown('stdin closed'));
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
  });
}
