import { CodexecError } from '../errors/index.js';
import { serveHttp } from '../server/http/index.js';
import { serve } from '../server/index.js';
import { configOrExit } from './config.js';

export interface ServeFlags {
  readonly http?: boolean;
  readonly host: string;
  readonly port: number;
  /** commander's `--no-auth`: true unless the flag is given. */
  readonly auth: boolean;
}

export async function serveCommand(flags: ServeFlags): Promise<void> {
  try {
    const config = configOrExit();
    if (flags.http) await serveHttp(config, { host: flags.host, port: flags.port, noAuth: !flags.auth });
    else await serve(config);
  } catch (error) {
    // A bad policy.json is found when the services are created: same exit as a bad setting.
    if (!(error instanceof CodexecError)) throw error;
    process.stderr.write(`codexec: ${error.message}\n`);
    process.exit(2);
  }
  process.exit(0);
}
