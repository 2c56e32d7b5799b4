import { z } from 'zod';

// Every setting, keyed by its environment variable. Values arrive as strings (env) or JSON
// values (config file); numbers and booleans are coerced. Paths may start with `~`. Over 400
// lines: one object of every setting with its check and description, read as the one list.

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/**
 * A list setting: a JSON array (config file, or env text starting with `[`), or, where `comma` is
 * set, comma-separated text. Absent stays undefined, so "no list" and "empty list" differ.
 */
const list = (comma: boolean) =>
  z.union([z.array(z.string()), z.string()]).transform((value, ctx) => {
    if (Array.isArray(value)) return value;
    const text = value.trim();
    if (!text.startsWith('[')) {
      if (comma)
        return text
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean);
      ctx.addIssue({ code: 'custom', message: 'expected a JSON array of strings, e.g. ["pytest.*"]' });
      return z.NEVER;
    }
    try {
      const parsed = z.array(z.string()).safeParse(JSON.parse(text));
      if (parsed.success) return parsed.data;
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'expected a JSON array of strings' });
    return z.NEVER;
  });

/** Principal names, comma-separated (or a JSON array), each as CODEXEC_HTTP_TOKENS spells them. */
const principalList = list(true).refine(
  (names) => names.every((name) => /^[A-Za-z0-9._-]{1,64}$/.test(name)),
  'principal names are 1-64 of A-Z a-z 0-9 . _ - (as in CODEXEC_HTTP_TOKENS), comma-separated',
);

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

export const SANDBOX_MODES = ['auto', 'namespace', 'landlock', 'subprocess', 'docker'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

// The approval gate (ADR 036). Runtime names mirror runtimes' LANGUAGES (config sits below
// runtimes, so it cannot import them; test/policy/settings.test.ts keeps the two equal).
export const APPROVAL_MODES = ['auto', 'ask', 'risky'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
/** Who is asked when the gate asks: the MCP client, serve --http's dashboard, or both at once. */
export const APPROVERS = ['client', 'dashboard', 'both'] as const;
export type Approver = (typeof APPROVERS)[number];
export const RUNTIME_NAMES = ['python', 'node', 'typescript', 'bash'] as const;
const flag = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
  .transform((value) => value === true || value === 'true' || value === '1');
const runtimeList = z
  .string()
  .transform((text) => [
    ...new Set(
      text
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    ),
  ])
  .pipe(
    z
      .array(z.enum(RUNTIME_NAMES, { error: `each runtime must be one of ${RUNTIME_NAMES.join(', ')}` }))
      .min(1, `name at least one of ${RUNTIME_NAMES.join(', ')}`),
  );

export const settingsSchema = z
  .object({
    CODEXEC_HOME: z.string().min(1).default('~/.codexec').describe('Root of all codexec state.'),
    CODEXEC_SANDBOX_MODE: z.enum(SANDBOX_MODES).default('auto').describe('How code is isolated.'),
    CODEXEC_SANDBOX_DIR: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Workspaces; default $CODEXEC_HOME/sandbox (a root server whose default home others may not search: /var/lib/codexec/runs/<id>/sandbox).',
      ),
    CODEXEC_LOG_DIR: z.string().min(1).optional().describe('JSONL logs; default $CODEXEC_HOME/logs.'),
    CODEXEC_SCRIPTS_DIR: z
      .string()
      .min(1)
      .optional()
      .describe('Script library; default $CODEXEC_HOME/scripts.'),
    CODEXEC_MAX_SCRIPT_VERSIONS: int(1, 10_000)
      .default(20)
      .describe('Versions a saved script keeps, the current one included; older ones are pruned.'),
    CODEXEC_MAX_SCRIPT_BYTES: int(1, 100_000_000)
      .default(1_000_000)
      .describe('Largest code save_script accepts (UTF-8 bytes).'),
    CODEXEC_DEFAULT_TIMEOUT_MS: int(1, 86_400_000)
      .default(30_000)
      .describe('Timeout when a call gives none.'),
    CODEXEC_MAX_TIMEOUT_MS: int(1, 86_400_000).default(300_000).describe('Upper clamp for any timeout.'),
    CODEXEC_SESSION_IDLE_TIMEOUT_MS: int(1000, 604_800_000).default(900_000).describe('Idle session kill.'),
    CODEXEC_KILL_GRACE_MS: int(0, 60_000).default(5000).describe('SIGTERM to SIGKILL grace period.'),
    CODEXEC_MAX_OUTPUT_CHARS: int(100, 100_000_000).default(10_000).describe('Per-stream output cap.'),
    CODEXEC_TRUNCATION_HEAD: int(0, 100_000_000).default(4000).describe('Characters kept from the start.'),
    CODEXEC_TRUNCATION_TAIL: int(0, 100_000_000).default(4000).describe('Characters kept from the end.'),
    CODEXEC_MAX_CODE_BYTES: int(1, 100_000_000).default(10_000_000).describe('Largest code accepted.'),
    CODEXEC_MAX_IMAGE_BYTES: int(0, 100_000_000)
      .default(2 * 1024 * 1024)
      .describe('Largest figure or image file returned as MCP image content (0: none).'),
    CODEXEC_MAX_ARTIFACTS: int(0, 100_000)
      .default(200)
      .describe(
        'File names one result (and its log entry) lists in artifacts and artifacts_deleted together; the rest are counted in artifacts_omitted.',
      ),
    CODEXEC_MAX_ARTIFACT_BYTES: int(0, 100_000_000)
      .default(64 * 1024)
      .describe(
        'UTF-8 bytes of the file names one result lists, together; the rest are counted in artifacts_omitted.',
      ),
    CODEXEC_MAX_MESSAGE_BYTES: int(1024, 500_000_000)
      .default(64 * 1024 * 1024)
      .describe(
        'Largest JSON-RPC message read whole; larger ones are refused by id. Default 64 MiB: ' +
          'the largest code (10 MB) JSON-escaped at worst (6x, all control characters) fits.',
      ),
    CODEXEC_LOG_RETENTION_DAYS_SUCCESS: int(1, 36_500).default(30),
    CODEXEC_LOG_RETENTION_DAYS_FAILURE: int(1, 36_500).default(90),
    CODEXEC_LOG_RETENTION_DAYS_SESSION: int(1, 36_500).default(90),
    CODEXEC_AUDIT_RETENTION_DAYS: int(1, 36_500)
      .default(365)
      .describe('Audit files older than this are removed; the chain stays verifiable.'),
    CODEXEC_INSTALL_TIMEOUT_MS: int(1000, 3_600_000)
      .default(300_000)
      .describe('Limit for one package install.'),
    CODEXEC_PACKAGE_BLOCKLIST: z
      .string()
      .default('')
      .describe('Comma-separated package names install_package refuses.'),
    CODEXEC_POOL_SIZE: int(0, 64).default(2).describe('Warm interpreters kept per language; 0 disables.'),
    CODEXEC_POOL_IDLE_MS: int(1000, 86_400_000)
      .default(300_000)
      .describe('Warm pool (and pre-started launchers) emptied after this idle time.'),
    CODEXEC_POOL_MEMORY_MB: int(0, 1_048_576)
      .default(512)
      .describe('Memory all waiting warm interpreters together may use; the pool starts no more.'),
    CODEXEC_MAX_SESSIONS: int(1, 1000).default(5).describe('Sessions one principal may run at once.'),
    CODEXEC_MAX_SESSIONS_TOTAL: int(1, 100_000)
      .optional()
      .describe('Sessions all principals together may run at once; default 4 x CODEXEC_MAX_SESSIONS.'),
    CODEXEC_MAX_PROCESSES_PER_SESSION: int(0, 1000)
      .default(16)
      .describe(
        'Background processes (start_process) one session may have at once, running or not yet read; 0: none.',
      ),
    CODEXEC_MAX_PROCESS_OUTPUT_BYTES: int(4096, 1 << 30)
      .default(4 * 1024 * 1024)
      .describe(
        'Output kept per background process: its last bytes (read_process_output says what was dropped).',
      ),
    CODEXEC_MAX_CONCURRENT_RUNS: int(1, 10_000)
      .default(8)
      .describe(
        'Runs (execute_code, execute_command, run_script, send_to_session, install_package) at once, server-wide.',
      ),
    CODEXEC_MAX_QUEUED_RUNS: int(0, 100_000)
      .default(64)
      .describe('Calls that may wait for a run slot; past it they are refused LIMIT_REACHED at once.'),
    CODEXEC_QUEUE_TIMEOUT_MS: int(0, 86_400_000)
      .default(30_000)
      .describe('How long a call waits for a run slot before it is refused LIMIT_REACHED.'),
    CODEXEC_MEMORY_MB: int(16, 1_048_576).default(512).describe('Memory limit per execution.'),
    CODEXEC_MAX_PROCS: int(1, 100_000).default(256).describe('Process limit per execution.'),
    CODEXEC_MAX_FILE_MB: int(1, 1_048_576).default(1024).describe('Largest file code may write.'),
    CODEXEC_TOTAL_MEMORY_MB: int(16, 16_777_216)
      .optional()
      .describe(
        'Memory of all runs, sessions and warm interpreters together (one parent cgroup, namespace ' +
          "mode); default half the machine's RAM (or of the server's own memory limit).",
      ),
    CODEXEC_TOTAL_MAX_PROCS: int(1, 4_194_304)
      .default(4096)
      .describe('Processes of all runs, sessions and warm interpreters together (one parent cgroup).'),
    CODEXEC_MAX_WORKSPACE_MB: int(1, 16_777_216)
      .default(1024)
      .describe("Disk one run's or session's workspace may use; past it the run is killed (limit disk)."),
    CODEXEC_MAX_PRINCIPAL_DISK_MB: int(1, 16_777_216)
      .default(4096)
      .describe("Disk all of one principal's workspaces may use; past it its runs and sessions are refused."),
    CODEXEC_WORKSPACE_RETENTION_HOURS: z.coerce
      .number()
      .positive()
      .max(87_600)
      .default(24)
      .describe('Workspaces runs left files in are removed this long after their last change.'),
    CODEXEC_NETWORK: z
      .enum(['none', 'host', 'allowlist'])
      .default('none')
      .describe(
        "Network for sandboxed code: none, host, or allowlist (only the hosts of CODEXEC_ALLOWED_DOMAINS, through the server's proxy).",
      ),
    CODEXEC_ALLOWED_DOMAINS: z
      .string()
      .default('')
      .describe(
        'With CODEXEC_NETWORK=allowlist: hosts code may reach (comma list of names, *.name wildcards, IP literals; :port, else 443 and 80).',
      ),
    CODEXEC_DENIED_DOMAINS: z
      .string()
      .default('')
      .describe(
        'With CODEXEC_NETWORK=allowlist: hosts never reached, whatever else allows them (same form; without a port: every port).',
      ),
    CODEXEC_PYTHON: z.string().min(1).optional().describe('Python interpreter (default: python3 on PATH).'),
    CODEXEC_NODE: z.string().min(1).optional().describe('Node interpreter (default: this Node).'),
    CODEXEC_BASH: z.string().min(1).optional().describe('Bash (default: bash on PATH).'),
    CODEXEC_CONTAINER_ENGINE: z
      .enum(['auto', 'docker', 'podman'])
      .default('auto')
      .describe(
        'Container engine for sandbox mode docker: auto (docker if its daemon answers, else podman).',
      ),
    CODEXEC_DOCKER_IMAGE: z
      .string()
      .min(1)
      .default('codexec-sandbox')
      .describe('Image of sandbox mode docker (`codexec image build` makes it).'),
    CODEXEC_DOCKER_MEMORY: z
      .string()
      .regex(/^\d+[kmg]?$/i, 'expected e.g. 512m')
      .default('512m')
      .describe('Memory limit per container.'),
    CODEXEC_DOCKER_CPU: z.coerce.number().positive().max(1024).default(1).describe('CPUs per container.'),
    CODEXEC_DOCKER_NETWORK: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected a network name such as none, bridge or host')
      .default('none')
      .describe('Network of sandbox containers (none: no network).'),
    CODEXEC_DOCKER_RUNTIME: z
      .string()
      .regex(/^[A-Za-z0-9/][A-Za-z0-9_./-]*$/, 'expected a runtime name such as runsc, or its absolute path')
      .optional()
      .describe(
        'OCI runtime of every sandbox container, e.g. runsc (gVisor): a name the engine knows (docker: its ' +
          "daemon's runtimes) or, for podman, a path; absent: the engine's default (podman: runc where installed).",
      ),
    CODEXEC_REDACT_SECRETS: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((value) => value === 'true')])
      .default(true)
      .describe('Mask secrets in run output before results, progress, logs and audit see it.'),
    CODEXEC_SECRETS_FILE: z
      .string()
      .min(1)
      .optional()
      .describe('Extra secret values to mask, one per line (read at start-up).'),
    CODEXEC_MAX_FILE_TRANSFER_BYTES: int(1, 1_073_741_824)
      .default(5_242_880)
      .describe('Largest file write_file accepts or read_file returns (bytes).'),
    CODEXEC_MAX_SAVED_OUTPUT_BYTES: int(0, 1_073_741_824)
      .default(64 * 1024 * 1024)
      .describe(
        "Bytes of a run's stdout and of its stderr kept on disk when the result truncates them, paged with read_file {execution_id, path} (0: none kept). A principal keeps at most 16 times this in all; the oldest go first.",
      ),
    CODEXEC_WORKSPACE: z
      .string()
      .min(1)
      .optional()
      .describe(
        "execute_command's persistent workspace; default $CODEXEC_HOME/workspace (a root server whose default home others may not search: /var/lib/codexec/runs/<id>/workspace).",
      ),
    CODEXEC_ALLOWED_PATHS: list(true)
      .refine((paths) => paths.every((path) => path.startsWith('/') || path.startsWith('~')), {
        message: 'every path must be absolute (or start with ~)',
      })
      .optional()
      .describe(
        "Absolute roots a caller's working_dir, or an absolute execute_command work_dir outside its workspace, must lie beneath (comma list or JSON array); absent or empty: no host directory, code works in fresh workspaces.",
      ),
    CODEXEC_ALLOWED_COMMANDS: commandPatterns
      .optional()
      .describe(
        'JSON array of regexes; each simple command of the parsed line must match one from its start (absent: no allowlist).',
      ),
    CODEXEC_BLOCKED_COMMANDS: commandPatterns
      .optional()
      .describe('JSON array of regexes; a line whose simple command matches one from its start is refused.'),
    CODEXEC_ENABLED: flag
      .default(true)
      .describe('false registers no tool that runs code; the read-only tools stay.'),
    CODEXEC_APPROVAL: z
      .enum(APPROVAL_MODES)
      .default('auto')
      .describe('auto: never ask; ask: every run asks the client; risky: only runs a rule marks ask.'),
    CODEXEC_APPROVER: z
      .enum(APPROVERS)
      .default('client')
      .describe(
        'Who answers approvals: client (elicitation), dashboard (serve --http page; calls wait), or both (first answer wins).',
      ),
    CODEXEC_APPROVAL_TIMEOUT_MS: int(100, 86_400_000)
      .default(120_000)
      .describe('An approval not answered within this time is a denial.'),
    CODEXEC_TASK_TTL_MS: int(1000, 30 * 86_400_000)
      .default(3_600_000)
      .describe('How long a task (MCP Tasks) is kept after it was created: its status, output and result.'),
    CODEXEC_MAX_PENDING_APPROVALS: int(1, 10_000)
      .default(16)
      .describe('Approvals the server waits on at once; past it a call is refused LIMIT_REACHED.'),
    CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL: int(1, 10_000)
      .optional()
      .describe(
        "Approvals one principal's calls may have waiting at once, within CODEXEC_MAX_PENDING_APPROVALS; default a quarter of it (at least 1).",
      ),
    CODEXEC_ALLOWED_RUNTIMES: runtimeList
      .default(['python', 'node', 'typescript', 'bash'])
      .describe('Comma-separated languages code may run in; others are refused.'),
    CODEXEC_HTTP_TOKEN: z
      .string()
      .min(16, 'use at least 16 characters')
      .optional()
      .describe('serve --http: the one bearer token (principal "default").'),
    CODEXEC_HTTP_TOKENS: z
      .string()
      .min(1)
      .optional()
      .describe('serve --http: a JSON file {"<principal>": "<token>"}; wins over CODEXEC_HTTP_TOKEN.'),
    CODEXEC_QUOTAS: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A JSON file of per-principal quotas {"<principal>|*": {max_concurrent_runs, max_sessions, runs_per_minute, cpu_seconds_per_day}}; unset: no quotas.',
      ),
    CODEXEC_HTTP_ADMINS: principalList
      .optional()
      .describe(
        "serve --http: principals (comma-separated names from the token file) whose dashboard shows every principal's runs and sessions.",
      ),
    CODEXEC_HTTP_APPROVERS: principalList
      .optional()
      .describe(
        'serve --http with CODEXEC_APPROVER dashboard or both: principals who may decide approvals in the dashboard (never their own calls); default CODEXEC_HTTP_ADMINS.',
      ),
    CODEXEC_HTTP_ALLOWED_ORIGINS: list(true)
      .optional()
      .describe('serve --http: origins (e.g. https://app.example.com) a browser request may come from.'),
    CODEXEC_HTTP_MAX_BODY_BYTES: int(1024, 500_000_000)
      .optional()
      .describe('serve --http: largest request body (413 above); default CODEXEC_MAX_MESSAGE_BYTES.'),
    CODEXEC_HTTP_MAX_INFLIGHT_BYTES: int(1024, 10_000_000_000)
      .optional()
      .describe(
        'serve --http: request body bytes one principal may have read and not yet answered (429 past it); default twice CODEXEC_HTTP_MAX_BODY_BYTES.',
      ),
    CODEXEC_HTTP_MAX_CONNECTIONS: int(1, 100_000)
      .default(256)
      .describe(
        'serve --http: connections open at once; past it a newcomer replaces a connection that has made no authenticated request (an idle one first), else gets 503.',
      ),
    CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS: int(1, 100_000)
      .default(32)
      .describe(
        'serve --http: open connections of one client address (IPv6: its /64) that have made no authenticated request; past it its newest replaces its oldest idle one, else gets 503.',
      ),
    CODEXEC_HTTP_HEADERS_TIMEOUT_MS: int(100, 600_000)
      .default(10_000)
      .describe('serve --http: time to send a request head, from connect or the last request (408 after).'),
    CODEXEC_HTTP_REQUEST_TIMEOUT_MS: int(100, 3_600_000)
      .default(60_000)
      .describe(
        'serve --http: time to send a whole request, head and body (408 after); not the time to answer.',
      ),
    CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: int(100, 600_000)
      .default(5_000)
      .describe('serve --http: an idle connection between requests is closed after this time.'),
    CODEXEC_METRICS_PUBLIC: flag
      .default(false)
      .describe(
        'serve --http: true serves GET /metrics without a bearer token (for a scraper on a trusted network).',
      ),
    CODEXEC_MCP_CONFIG: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Code mode: the mcpServers file of downstream MCP servers; default $CODEXEC_HOME/mcp.json if it exists.',
      ),
    CODEXEC_TOOLS: z
      .string()
      .trim()
      .min(1)
      .default('all')
      .describe(
        'Which tools to register: all, codemode (execute_code and health), or a comma list of names.',
      ),
    CODEXEC_BRIDGE_RATE_LIMIT: int(1, 100_000)
      .default(60)
      .describe('Code mode: downstream tool calls one run may make per minute (refused ones count too).'),
    CODEXEC_MAX_TOOL_CALL_RECORDS: int(0, 100_000)
      .default(100)
      .describe(
        'Code mode: tool calls a result, log entry and audit entry record in full; the rest are counted per tool and outcome.',
      ),
    CODEXEC_STORE: z
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
    CODEXEC_APPROVAL_KEY_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A file of 32+ random bytes: the key that signs approval tickets and calls between replicas (required with a postgres store).',
      ),
    CODEXEC_ADVERTISE_URL: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//.test(value), 'an http:// or https:// URL')
      .optional()
      .describe(
        'serve --http with a postgres store: the URL other replicas reach this one at; default http://<bind host>:<port>.',
      ),
    LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  })
  .describe('codexec settings; conflicts between them are reconciled in coherence.ts');

export type Settings = z.infer<typeof settingsSchema>;
export type SettingName = keyof z.input<typeof settingsSchema>;
export const SETTING_NAMES = Object.keys(settingsSchema.shape) as SettingName[];
