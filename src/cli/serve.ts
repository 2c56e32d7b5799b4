import { serve } from '../server/index.js';
import { configOrExit } from './config.js';

export async function serveCommand(): Promise<void> {
  await serve(configOrExit());
  process.exit(0);
}
