import type { Config } from '../config/index.js';
import { Engine } from '../engine/index.js';
import { LogWriter } from '../logs/index.js';
import { Interpreters } from '../runtimes/index.js';
import { BackendRegistry } from '../sandbox/index.js';

/** The long-lived parts shared by every connection. Creating them does no I/O. */
export interface Services {
  readonly config: Config;
  readonly engine: Engine;
  readonly logs: LogWriter;
}

export function createServices(config: Config): Services {
  const logs = new LogWriter(config.logDir);
  const engine = new Engine({
    config,
    backends: new BackendRegistry(config.sandboxMode),
    interpreters: new Interpreters(config.interpreters),
    logs,
  });
  return { config, engine, logs };
}
