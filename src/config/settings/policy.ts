import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../../errors/index.js';
import { expandHome } from '../../util/index.js';
import { readQuotas } from '../quotas.js';
import { from, setting } from './define.js';
import { dir, flag, int, list, path, splitCommas } from './values.js';

// What code may do and who decides: the approval gate, execute_command's lists, the secrets
// filter, per-principal quotas and the packages install_package refuses.

export const APPROVAL_MODES = ['auto', 'ask', 'risky'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
/** Who is asked when the gate asks: the MCP client, serve --http's dashboard, or both at once. */
export const APPROVERS = ['client', 'dashboard', 'both'] as const;
export type Approver = (typeof APPROVERS)[number];
// Runtime names mirror runtimes' LANGUAGES (config sits below runtimes, so it cannot import them;
// test/policy/settings.test.ts keeps the two equal).
export const RUNTIME_NAMES = ['python', 'node', 'typescript', 'bash'] as const;

const runtimeList = z
  .string()
  .transform((text) => [...new Set(splitCommas(text))])
  .pipe(
    z
      .array(z.enum(RUNTIME_NAMES, { error: `each runtime must be one of ${RUNTIME_NAMES.join(', ')}` }))
      .min(1, `name at least one of ${RUNTIME_NAMES.join(', ')}`),
  )
  // Config keeps them as plain names: callers compare them with a language from a request.
  .transform((names): string[] => names);

/** Command patterns: JavaScript regular expressions, each checked here so a typo stops start-up. */
const commandPatterns = list(false).superRefine((patterns, ctx) => {
  patterns.forEach((pattern, index) => {
    try {
      new RegExp(pattern);
      new RegExp(`^(?:${pattern})`);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `pattern ${index + 1} ${JSON.stringify(pattern)} is not a valid regular expression (${(error as Error).message})`,
      });
    }
  });
});

const maxPendingApprovals = setting('CODEXEC_MAX_PENDING_APPROVALS', () =>
  int(1, 10_000)
    .default(16)
    .describe('Approvals the server waits on at once; past it a call is refused LIMIT_REACHED.'),
);
const maxPendingApprovalsPerPrincipal = setting('CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL', () =>
  int(1, 10_000)
    .optional()
    .describe(
      "Approvals one principal's calls may have waiting at once, within CODEXEC_MAX_PENDING_APPROVALS; default a quarter of it (at least 1).",
    ),
);
const allowedPaths = setting('CODEXEC_ALLOWED_PATHS', () =>
  list(true)
    .refine((paths) => paths.every((path) => path.startsWith('/') || path.startsWith('~')), {
      message: 'every path must be absolute (or start with ~)',
    })
    .optional()
    .describe(
      "Absolute roots a caller's working_dir, or an absolute execute_command work_dir outside its workspace, must lie beneath (comma list or JSON array); absent or empty: no host directory, code works in fresh workspaces.",
    ),
);
const redactSecrets = setting('CODEXEC_REDACT_SECRETS', () =>
  flag()
    .default(true)
    .describe('Mask secrets in run output before results, progress, logs and audit see it.'),
);
const secretsFile = setting('CODEXEC_SECRETS_FILE', () =>
  z.string().min(1).optional().describe('Extra secret values to mask, one per line (read at start-up).'),
);
const quotasFile = setting('CODEXEC_QUOTAS', () =>
  z
    .string()
    .min(1)
    .optional()
    .describe(
      'A JSON file of per-principal quotas {"<principal>|*": {max_concurrent_runs, max_sessions, runs_per_minute, cpu_seconds_per_day}}; unset: no quotas.',
    ),
);

export const policy = {
  packageBlocklist: setting('CODEXEC_PACKAGE_BLOCKLIST', () =>
    z
      .string()
      .default('')
      .transform(splitCommas)
      .describe('Comma-separated package names install_package refuses.'),
  ),
  /** The secrets filter: on or off, and the values of CODEXEC_SECRETS_FILE (read at start-up). */
  secrets: {
    redact: redactSecrets,
    file: path(secretsFile),
    values: from([redactSecrets, secretsFile], ([redact, file], context) =>
      redact && file !== undefined ? readSecretValues(expandHome(file, context.home)) : [],
    ),
  },
  /** execute_command: its persistent workspace, where else a work_dir may be, its command lists. */
  command: {
    workspace: dir(
      setting('CODEXEC_WORKSPACE', () =>
        z
          .string()
          .min(1)
          .optional()
          .describe(
            "execute_command's persistent workspace; default $CODEXEC_HOME/workspace (a root server whose default home others may not search: /var/lib/codexec/runs/<id>/workspace).",
          ),
      ),
      'workspace',
      'runs',
    ),
    allowedPaths: from([allowedPaths], ([paths], context) =>
      (paths ?? []).map((path) => expandHome(path, context.home)),
    ),
    /** undefined: no allowlist; [] allows nothing. */
    allowedCommands: setting('CODEXEC_ALLOWED_COMMANDS', () =>
      commandPatterns
        .optional()
        .describe(
          'JSON array of regexes; each simple command of the parsed line must match one from its start (absent: no allowlist).',
        ),
    ),
    blockedCommands: setting('CODEXEC_BLOCKED_COMMANDS', () =>
      commandPatterns
        .optional()
        .describe(
          'JSON array of regexes; a line whose simple command matches one from its start is refused.',
        ),
    ),
  },
  /** CODEXEC_QUOTAS: the file and its table (principal or `*` → quotas); undefined: none. */
  quotas: from([quotasFile], ([file], context) =>
    file === undefined ? undefined : readQuotas(expandHome(file, context.home)),
  ),
  /** The approval gate: is code execution on, who approves, which languages. */
  gate: {
    enabled: setting('CODEXEC_ENABLED', () =>
      flag().default(true).describe('false registers no tool that runs code; the read-only tools stay.'),
    ),
    approval: setting('CODEXEC_APPROVAL', () =>
      z
        .enum(APPROVAL_MODES)
        .default('auto')
        .describe('auto: never ask; ask: every run asks the client; risky: only runs a rule marks ask.'),
    ),
    /** Who answers (dashboard and both: serve --http only). */
    approver: setting('CODEXEC_APPROVER', () =>
      z
        .enum(APPROVERS)
        .default('client')
        .describe(
          'Who answers approvals: client (elicitation), dashboard (serve --http page; calls wait), or both (first answer wins).',
        ),
    ),
    approvalTimeoutMs: setting('CODEXEC_APPROVAL_TIMEOUT_MS', () =>
      int(100, 86_400_000)
        .default(120_000)
        .describe('An approval not answered within this time is a denial.'),
    ),
    maxPendingApprovals,
    /** One principal's share of the pending approvals: a quarter by default, never above them all. */
    maxPendingApprovalsPerPrincipal: from(
      [maxPendingApprovals, maxPendingApprovalsPerPrincipal],
      ([all, perPrincipal]) => Math.min(all, perPrincipal ?? Math.ceil(all / 4)),
    ),
    allowedRuntimes: setting('CODEXEC_ALLOWED_RUNTIMES', () =>
      runtimeList
        .default(['python', 'node', 'typescript', 'bash'])
        .describe('Comma-separated languages code may run in; others are refused.'),
    ),
  },
};

/** The secrets file's values: one per line, trimmed, blank lines ignored. */
function readSecretValues(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`CODEXEC_SECRETS_FILE: cannot read ${file} (${why})`);
  }
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}
