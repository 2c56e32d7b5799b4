import { CodexecError } from '../errors/index.js';
import { serve } from '../server/index.js';
import { configOrExit } from './config.js';

export async function serveCommand(): Promise<void> {
  try {
    await serve(configOrExit());
  } catch (error) {
    // A bad policy.json is found when the services are created: same exit as a bad setting.
    if (!(error instanceof CodexecError)) throw error;
    process.stderr.write(`codexec: ${error.message}\n`);
    process.exit(2);
  }
  process.exit(0);
}
