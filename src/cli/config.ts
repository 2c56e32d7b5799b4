import { type Config, loadConfig } from '../config/index.js';
import { CodexecError } from '../errors/index.js';
import { setLogLevel } from '../util/index.js';

/**
 * Load configuration or stop with `NAME: what is wrong` on stderr and exit code 2. Given
 * `problems`, settings that conflict are noted there instead (a value no setting can take still stops).
 */
export function configOrExit(overrides: NodeJS.ProcessEnv = {}, problems?: string[]): Config {
  try {
    const config = loadConfig({ ...process.env, ...overrides }, undefined, undefined, problems);
    setLogLevel(config.logLevel);
    return config;
  } catch (error) {
    if (!(error instanceof CodexecError)) throw error;
    process.stderr.write(`codexec: ${error.message}\n`);
    process.exit(2);
  }
}
