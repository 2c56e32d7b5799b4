import { z } from 'zod';
import { from, setting } from './define.js';
import { int, path } from './values.js';

// What is kept, for how long, and where: logs, the audit trail, saved scripts, tasks, and the
// store replicas share.

const store = setting('CODEXEC_STORE', () =>
  z
    .string()
    .trim()
    .default('sqlite')
    .refine(
      (value) => value === 'sqlite' || /^postgres(ql)?:\/\//.test(value),
      'sqlite (the default: files under CODEXEC_HOME) or a postgres://user:password@host:port/db URL',
    )
    .describe(
      'Where shared state lives: sqlite (files under CODEXEC_HOME) or postgres://… (replicas share logs, sessions, tasks, scripts, audit).',
    ),
);

type StoreKind = { readonly kind: 'sqlite' } | { readonly kind: 'postgres'; readonly url: string };

export const kept = {
  /** Per principal's library: versions kept per script (current included), largest code saved. */
  scriptLimits: {
    maxVersions: setting('CODEXEC_MAX_SCRIPT_VERSIONS', () =>
      int(1, 10_000)
        .default(20)
        .describe('Versions a saved script keeps, the current one included; older ones are pruned.'),
    ),
    maxScriptBytes: setting('CODEXEC_MAX_SCRIPT_BYTES', () =>
      int(1, 100_000_000).default(1_000_000).describe('Largest code save_script accepts (UTF-8 bytes).'),
    ),
  },
  retentionDays: {
    success: setting('CODEXEC_LOG_RETENTION_DAYS_SUCCESS', () => int(1, 36_500).default(30)),
    failure: setting('CODEXEC_LOG_RETENTION_DAYS_FAILURE', () => int(1, 36_500).default(90)),
    session: setting('CODEXEC_LOG_RETENTION_DAYS_SESSION', () => int(1, 36_500).default(90)),
  },
  auditRetentionDays: setting('CODEXEC_AUDIT_RETENTION_DAYS', () =>
    int(1, 36_500)
      .default(365)
      .describe('Audit files older than this are removed; the chain stays verifiable.'),
  ),
  /** MCP Tasks: how long a task's record is kept from its creation. */
  taskTtlMs: setting('CODEXEC_TASK_TTL_MS', () =>
    int(1000, 30 * 86_400_000)
      .default(3_600_000)
      .describe('How long a task (MCP Tasks) is kept after it was created: its status, output and result.'),
  ),
  /**
   * Where shared state lives. `sqlite`: files under CODEXEC_HOME (one server or several on one
   * home); `postgres`: replicas share one database.
   */
  store: from(
    [store],
    ([value]): StoreKind => (value === 'sqlite' ? { kind: 'sqlite' } : { kind: 'postgres', url: value }),
  ),
  /** The shared key (else a random one per process). */
  approvalKeyFile: path(
    setting('CODEXEC_APPROVAL_KEY_FILE', () =>
      z
        .string()
        .min(1)
        .optional()
        .describe(
          'A file of 32+ random bytes: the key that signs approval tickets and calls between replicas (required with a postgres store).',
        ),
    ),
  ),
  /** How other replicas reach this one (serve --http, postgres store). */
  advertiseUrl: setting('CODEXEC_ADVERTISE_URL', () =>
    z
      .string()
      .url()
      .refine((value) => /^https?:\/\//.test(value), 'an http:// or https:// URL')
      .transform((url) => url.replace(/\/+$/, ''))
      .optional()
      .describe(
        'serve --http with a postgres store: the URL other replicas reach this one at; default http://<bind host>:<port>.',
      ),
  ),
};
