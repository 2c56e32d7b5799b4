import { join } from 'node:path';
import { z } from 'zod';
import { from, fromContext, setting } from './define.js';
import { dir } from './values.js';

// Where codexec keeps its state, and how much it logs.

const codexecHome = setting('CODEXEC_HOME', () =>
  z.string().min(1).default('~/.codexec').describe('Root of all codexec state.'),
);

export const home = {
  home: from([codexecHome], (_value, context) => context.root),
  /**
   * Where runs live (workspaces, package environments, command workspaces, install stages):
   * CODEXEC_HOME, or for a root server whose default home its sandbox user cannot reach, a
   * directory of its own under /var/lib/codexec (paths.ts runHome).
   */
  runHome: fromContext((context) => context.runs),
  sandboxDir: dir(
    setting('CODEXEC_SANDBOX_DIR', () =>
      z
        .string()
        .min(1)
        .optional()
        .describe(
          'Workspaces; default $CODEXEC_HOME/sandbox (a root server whose default home others may not search: /var/lib/codexec/runs/<id>/sandbox).',
        ),
    ),
    'sandbox',
    'runs',
  ),
  logDir: dir(
    setting('CODEXEC_LOG_DIR', () =>
      z.string().min(1).optional().describe('JSONL logs; default $CODEXEC_HOME/logs.'),
    ),
    'logs',
  ),
  scriptsDir: dir(
    setting('CODEXEC_SCRIPTS_DIR', () =>
      z.string().min(1).optional().describe('Script library; default $CODEXEC_HOME/scripts.'),
    ),
    'scripts',
  ),
  /** Global package environments: `python/` (pip --target) and `node/` (npm --prefix). */
  envsDir: fromContext((context) => join(context.runs, 'envs')),
  logLevel: setting('LOG_LEVEL', () => z.enum(['debug', 'info', 'warn', 'error']).default('info')),
};
