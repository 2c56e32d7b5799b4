import type { Config } from '../config/index.js';
import { CodexecError } from '../errors/index.js';
import { serve } from '../server/index.js';
import { configOrExit } from './config.js';

export interface ServeFlags {
  readonly http?: boolean;
  readonly host: string;
  readonly port: number;
  /** commander's `--no-auth`: true unless the flag is given. */
  readonly auth: boolean;
}

/** commander's view of where each flag's value came from ('cli' when given). */
interface FlagSources {
  getOptionValueSource(key: string): string | undefined;
}

export async function serveCommand(flags: ServeFlags, command: FlagSources): Promise<void> {
  const httpOnly = ['host', 'port', 'auth'].filter((key) => command.getOptionValueSource(key) === 'cli');
  if (!flags.http && httpOnly.length > 0) {
    // Silently serving stdio would leave the user thinking the server listens somewhere.
    const given = httpOnly.map((key) => (key === 'auth' ? '--no-auth' : `--${key}`)).join(', ');
    const verb = httpOnly.length === 1 ? 'applies' : 'apply';
    process.stderr.write(
      `codexec: ${given} ${verb} only to serve --http; add --http, or leave it out for stdio\n`,
    );
    process.exit(2);
  }
  await serveWith(async (config) => {
    if (flags.http) {
      // Only --http loads the HTTP server, its dashboard and metrics: a stdio server never uses them.
      const { serveHttp } = await import('../server/http/index.js');
      await serveHttp(config, { host: flags.host, port: flags.port, noAuth: !flags.auth });
    } else await serve(config);
  });
}

/**
 * `codexec serve` as MCP clients start it, without a flag: MCP over stdio. The bin runs it without
 * the command-line parser, whose commands would otherwise stay in an idle server's heap (~0.8 MB).
 */
export function serveStdio(): Promise<void> {
  return serveWith(serve);
}

/** Serve with the configuration until the client is gone; a bad setting or policy exits 2. */
async function serveWith(run: (config: Config) => Promise<void>): Promise<void> {
  try {
    await run(configOrExit());
  } catch (error) {
    // A bad policy.json is found when the services are created: same exit as a bad setting.
    if (!(error instanceof CodexecError)) throw error;
    process.stderr.write(`codexec: ${error.message}\n`);
    process.exit(2);
  }
  process.exit(0);
}
