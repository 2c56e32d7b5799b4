import { existsSync, readFileSync } from 'node:fs';
import { homedir, totalmem } from 'node:os';
import { join } from 'node:path';
import { type HostRule, parseRules } from '../egress/rules.js';
import { ConfigError } from '../errors/index.js';
import { expandHome, log } from '../util/index.js';
import { reconcile } from './coherence.js';
import { runHome } from './paths.js';
import { type QuotaTable, readQuotas } from './quotas.js';
import {
  type ApprovalMode,
  type Approver,
  type SandboxMode,
  SETTING_NAMES,
  type Settings,
  settingsSchema,
} from './schema.js';
import { CODEMODE_TOOLS, TOOL_NAMES } from './tools.js';

export type { ApprovalMode, Approver, SandboxMode };

/** The resolved configuration every module reads. Paths are absolute. */
export interface Config {
  readonly home: string;
  /**
   * Where runs live (workspaces, package environments, command workspaces, install stages):
   * CODEXEC_HOME, or for a root server whose default home its sandbox user cannot reach, a
   * directory of its own under /var/lib/codexec (paths.ts runHome).
   */
  readonly runHome: string;
  readonly sandboxMode: SandboxMode;
  readonly sandboxDir: string;
  readonly logDir: string;
  readonly scriptsDir: string;
  /** Per principal's library: versions kept per script (current included), largest code saved. */
  readonly scriptLimits: { readonly maxVersions: number; readonly maxScriptBytes: number };
  /** Global package environments: `python/` (pip --target) and `node/` (npm --prefix). */
  readonly envsDir: string;
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  readonly sessionIdleTimeoutMs: number;
  readonly killGraceMs: number;
  readonly output: { readonly maxChars: number; readonly head: number; readonly tail: number };
  readonly maxCodeBytes: number;
  /** Largest figure or image file a result carries as image content (CODEXEC_MAX_IMAGE_BYTES). */
  readonly maxImageBytes: number;
  /** File names a result lists, and their bytes together (CODEXEC_MAX_ARTIFACTS, _ARTIFACT_BYTES). */
  readonly artifacts: { readonly maxEntries: number; readonly maxBytes: number };
  /** Largest JSON-RPC message a transport reads whole (CODEXEC_MAX_MESSAGE_BYTES). */
  readonly maxMessageBytes: number;
  readonly retentionDays: { readonly success: number; readonly failure: number; readonly session: number };
  readonly auditRetentionDays: number;
  /** Sessions per principal (CODEXEC_MAX_SESSIONS) and for all of them together. */
  readonly maxSessions: number;
  readonly maxSessionsTotal: number;
  /** Background processes: how many one session may have, and the output kept of each. */
  readonly processes: { readonly perSession: number; readonly outputBytes: number };
  /** Runs at once server-wide, calls that may wait for one, and for how long. */
  readonly runs: {
    readonly maxConcurrent: number;
    readonly maxQueued: number;
    readonly queueTimeoutMs: number;
  };
  readonly pool: { readonly size: number; readonly idleMs: number; readonly memoryMb: number };
  readonly installTimeoutMs: number;
  readonly packageBlocklist: readonly string[];
  readonly limits: { readonly memoryMb: number; readonly maxProcs: number; readonly maxFileMb: number };
  /** All runs together (one parent cgroup): CODEXEC_TOTAL_MEMORY_MB, CODEXEC_TOTAL_MAX_PROCS. */
  readonly totals: { readonly memoryMb: number; readonly maxProcs: number };
  /** Disk: per workspace, per principal (MB), and how long a kept workspace lives (ms). */
  readonly disk: { readonly workspaceMb: number; readonly principalMb: number; readonly retentionMs: number };
  readonly network: 'none' | 'host' | 'allowlist';
  /** CODEXEC_NETWORK=allowlist: the server's lists (src/egress). */
  readonly egress: { readonly allowed: readonly HostRule[]; readonly denied: readonly HostRule[] };
  readonly interpreters: { readonly python?: string; readonly node?: string; readonly bash?: string };
  readonly docker: {
    readonly engine: 'auto' | 'docker' | 'podman';
    readonly image: string;
    readonly memory: string;
    readonly cpu: number;
    readonly network: string;
    readonly runtime?: string;
  };
  readonly logLevel: Settings['LOG_LEVEL'];
  /** The secrets filter: on or off, and the values of CODEXEC_SECRETS_FILE (read at start-up). */
  readonly secrets: { readonly redact: boolean; readonly file?: string; readonly values: readonly string[] };
  /** write_file / read_file: the largest file moved in or out. */
  readonly maxFileTransferBytes: number;
  /** Bytes of each stream of a truncated run kept on disk for paging (0: none). */
  readonly maxSavedOutputBytes: number;
  /** execute_command: its persistent workspace, where else a work_dir may be, its command lists. */
  readonly command: {
    readonly workspace: string;
    readonly allowedPaths: readonly string[];
    /** undefined: no allowlist; [] allows nothing. */
    readonly allowedCommands?: readonly string[];
    readonly blockedCommands?: readonly string[];
  };
  /** Code mode: the downstream MCP servers' file (undefined: none configured) and the call rate. */
  readonly codemode: {
    /** CODEXEC_TOOLS: the tools to register (undefined: all of them). */
    readonly tools?: readonly string[];
    /** CODEXEC_TOOLS=codemode: short descriptions and no output schemas, to keep tools/list small. */
    readonly compact: boolean;
    readonly mcpConfig?: string;
    readonly rateLimitPerMinute: number;
    /** CODEXEC_MAX_TOOL_CALL_RECORDS: calls recorded in full per run (or send); the rest are counted. */
    readonly maxToolCallRecords: number;
  };
  /** serve --http: where tokens come from, which browser origins may call, the body and connection limits. */
  readonly http: {
    readonly token?: string;
    readonly tokensFile?: string;
    readonly allowedOrigins: readonly string[];
    /** CODEXEC_HTTP_ADMINS: principals that see everyone's runs and sessions in the dashboard. */
    readonly admins: readonly string[];
    /** CODEXEC_HTTP_APPROVERS (default the admins): who may decide approvals in the dashboard. */
    readonly approvers: readonly string[];
    readonly maxBodyBytes: number;
    /** CODEXEC_HTTP_MAX_INFLIGHT_BYTES: body bytes one principal holds until answered. */
    readonly maxInflightBytes: number;
    /** Connections open at once, and how long a request head, a whole request and an idle connection may take. */
    readonly maxConnections: number;
    /** CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS: connections not yet authenticated, per client address. */
    readonly maxConnectionsPerAddress: number;
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly keepAliveTimeoutMs: number;
    /** CODEXEC_METRICS_PUBLIC: GET /metrics without a token. */
    readonly metricsPublic: boolean;
  };
  /** The approval gate: is code execution on, who approves, which languages (ADR 036). */
  readonly gate: {
    readonly enabled: boolean;
    readonly approval: ApprovalMode;
    /** CODEXEC_APPROVER: who answers (dashboard and both: serve --http only). */
    readonly approver: Approver;
    readonly approvalTimeoutMs: number;
    readonly maxPendingApprovals: number;
    /** CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL: one principal's share of them. */
    readonly maxPendingApprovalsPerPrincipal: number;
    readonly allowedRuntimes: readonly string[];
  };
  /** CODEXEC_QUOTAS: the file and its table (principal or `*` → quotas); undefined: none. */
  readonly quotas?: { readonly file: string; readonly table: QuotaTable };
  /** MCP Tasks: how long a task's record is kept from its creation (CODEXEC_TASK_TTL_MS). */
  readonly taskTtlMs: number;
  /**
   * CODEXEC_STORE: where shared state lives. `sqlite`: files under CODEXEC_HOME (one server or
   * several on one home); `postgres`: replicas share one database (DESIGN §9 "Scale-out").
   */
  readonly store: { readonly kind: 'sqlite' } | { readonly kind: 'postgres'; readonly url: string };
  /** CODEXEC_APPROVAL_KEY_FILE: the shared key (else a random one per process). */
  readonly approvalKeyFile?: string;
  /** CODEXEC_ADVERTISE_URL: how other replicas reach this one (serve --http, postgres store). */
  readonly advertiseUrl?: string;
}

type RawSettings = Partial<Record<string, unknown>>;

/**
 * Resolve configuration: env > `$CODEXEC_HOME/config.json` (optional) > defaults.
 * Throws ConfigError with `NAME: what is wrong` for the first invalid setting, or for two set
 * settings that conflict; a default that conflicts with a set value is moved and `warn`ed about.
 * `home`: the user's home directory, which `~` names.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (message) => log('warn', message),
  home: string = homedir(),
): Config {
  const fromEnv: RawSettings = {};
  for (const name of SETTING_NAMES) {
    const value = env[name];
    if (value !== undefined && value !== '') fromEnv[name] = value;
  }
  const codexecHome = expandHome(String(fromEnv.CODEXEC_HOME ?? '~/.codexec'), home);
  const fromFile = readConfigFile(join(codexecHome, 'config.json'));
  const raw = { ...fromFile, ...fromEnv };
  const parsed = settingsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = issue?.path[0] === undefined ? 'config' : String(issue.path[0]);
    throw new ConfigError(`${name}: ${issue?.message ?? 'invalid value'}`);
  }
  const { settings: s, warnings } = reconcile(parsed.data, new Set(Object.keys(raw)));
  // LOG_LEVEL is not applied yet (the caller does that with the result), so honour it here.
  if (s.LOG_LEVEL !== 'error') for (const warning of warnings) warn(warning);
  const root = expandHome(s.CODEXEC_HOME, home);
  const runs = runHome(root, { explicit: fromEnv.CODEXEC_HOME !== undefined, uid: process.getuid?.() });
  const dir = (value: string | undefined, fallback: string, under = root) =>
    expandHome(value ?? join(under, fallback), home);
  const mcpConfig = mcpConfigPath(s.CODEXEC_MCP_CONFIG, root, home);
  const tools = toolList(s.CODEXEC_TOOLS);
  return {
    home: root,
    runHome: runs,
    sandboxMode: s.CODEXEC_SANDBOX_MODE,
    sandboxDir: dir(s.CODEXEC_SANDBOX_DIR, 'sandbox', runs),
    logDir: dir(s.CODEXEC_LOG_DIR, 'logs'),
    scriptsDir: dir(s.CODEXEC_SCRIPTS_DIR, 'scripts'),
    scriptLimits: { maxVersions: s.CODEXEC_MAX_SCRIPT_VERSIONS, maxScriptBytes: s.CODEXEC_MAX_SCRIPT_BYTES },
    envsDir: join(runs, 'envs'),
    defaultTimeoutMs: s.CODEXEC_DEFAULT_TIMEOUT_MS,
    maxTimeoutMs: s.CODEXEC_MAX_TIMEOUT_MS,
    sessionIdleTimeoutMs: s.CODEXEC_SESSION_IDLE_TIMEOUT_MS,
    killGraceMs: s.CODEXEC_KILL_GRACE_MS,
    output: {
      maxChars: s.CODEXEC_MAX_OUTPUT_CHARS,
      head: s.CODEXEC_TRUNCATION_HEAD,
      tail: s.CODEXEC_TRUNCATION_TAIL,
    },
    maxCodeBytes: s.CODEXEC_MAX_CODE_BYTES,
    maxImageBytes: s.CODEXEC_MAX_IMAGE_BYTES,
    artifacts: { maxEntries: s.CODEXEC_MAX_ARTIFACTS, maxBytes: s.CODEXEC_MAX_ARTIFACT_BYTES },
    maxFileTransferBytes: s.CODEXEC_MAX_FILE_TRANSFER_BYTES,
    maxSavedOutputBytes: s.CODEXEC_MAX_SAVED_OUTPUT_BYTES,
    maxMessageBytes: s.CODEXEC_MAX_MESSAGE_BYTES,
    retentionDays: {
      success: s.CODEXEC_LOG_RETENTION_DAYS_SUCCESS,
      failure: s.CODEXEC_LOG_RETENTION_DAYS_FAILURE,
      session: s.CODEXEC_LOG_RETENTION_DAYS_SESSION,
    },
    auditRetentionDays: s.CODEXEC_AUDIT_RETENTION_DAYS,
    maxSessions: s.CODEXEC_MAX_SESSIONS,
    maxSessionsTotal: s.CODEXEC_MAX_SESSIONS_TOTAL ?? 4 * s.CODEXEC_MAX_SESSIONS,
    processes: {
      perSession: s.CODEXEC_MAX_PROCESSES_PER_SESSION,
      outputBytes: s.CODEXEC_MAX_PROCESS_OUTPUT_BYTES,
    },
    runs: {
      maxConcurrent: s.CODEXEC_MAX_CONCURRENT_RUNS,
      maxQueued: s.CODEXEC_MAX_QUEUED_RUNS,
      queueTimeoutMs: s.CODEXEC_QUEUE_TIMEOUT_MS,
    },
    pool: { size: s.CODEXEC_POOL_SIZE, idleMs: s.CODEXEC_POOL_IDLE_MS, memoryMb: s.CODEXEC_POOL_MEMORY_MB },
    installTimeoutMs: s.CODEXEC_INSTALL_TIMEOUT_MS,
    packageBlocklist: s.CODEXEC_PACKAGE_BLOCKLIST.split(',')
      .map((name) => name.trim())
      .filter(Boolean),
    limits: {
      memoryMb: s.CODEXEC_MEMORY_MB,
      maxProcs: s.CODEXEC_MAX_PROCS,
      maxFileMb: s.CODEXEC_MAX_FILE_MB,
    },
    totals: {
      memoryMb: s.CODEXEC_TOTAL_MEMORY_MB ?? defaultTotalMemoryMb(),
      maxProcs: s.CODEXEC_TOTAL_MAX_PROCS,
    },
    disk: {
      workspaceMb: s.CODEXEC_MAX_WORKSPACE_MB,
      principalMb: s.CODEXEC_MAX_PRINCIPAL_DISK_MB,
      retentionMs: Math.round(s.CODEXEC_WORKSPACE_RETENTION_HOURS * 3_600_000),
    },
    network: s.CODEXEC_NETWORK,
    egress: {
      allowed: parseRules(s.CODEXEC_ALLOWED_DOMAINS, 'CODEXEC_ALLOWED_DOMAINS', configError),
      denied: parseRules(s.CODEXEC_DENIED_DOMAINS, 'CODEXEC_DENIED_DOMAINS', configError),
    },
    interpreters: {
      ...(s.CODEXEC_PYTHON && { python: expandHome(s.CODEXEC_PYTHON, home) }),
      ...(s.CODEXEC_NODE && { node: expandHome(s.CODEXEC_NODE, home) }),
      ...(s.CODEXEC_BASH && { bash: expandHome(s.CODEXEC_BASH, home) }),
    },
    docker: {
      engine: s.CODEXEC_CONTAINER_ENGINE,
      image: s.CODEXEC_DOCKER_IMAGE,
      memory: s.CODEXEC_DOCKER_MEMORY,
      cpu: s.CODEXEC_DOCKER_CPU,
      network: s.CODEXEC_DOCKER_NETWORK,
      ...(s.CODEXEC_DOCKER_RUNTIME && { runtime: s.CODEXEC_DOCKER_RUNTIME }),
    },
    logLevel: s.LOG_LEVEL,
    secrets: readSecrets(
      s.CODEXEC_REDACT_SECRETS,
      s.CODEXEC_SECRETS_FILE && expandHome(s.CODEXEC_SECRETS_FILE, home),
    ),
    command: {
      workspace: dir(s.CODEXEC_WORKSPACE, 'workspace', runs),
      allowedPaths: (s.CODEXEC_ALLOWED_PATHS ?? []).map((path) => expandHome(path, home)),
      ...(s.CODEXEC_ALLOWED_COMMANDS && { allowedCommands: s.CODEXEC_ALLOWED_COMMANDS }),
      ...(s.CODEXEC_BLOCKED_COMMANDS && { blockedCommands: s.CODEXEC_BLOCKED_COMMANDS }),
    },
    codemode: {
      ...(tools && { tools }),
      compact: s.CODEXEC_TOOLS === 'codemode',
      ...(mcpConfig && { mcpConfig }),
      rateLimitPerMinute: s.CODEXEC_BRIDGE_RATE_LIMIT,
      maxToolCallRecords: s.CODEXEC_MAX_TOOL_CALL_RECORDS,
    },
    http: {
      ...(s.CODEXEC_HTTP_TOKEN && { token: s.CODEXEC_HTTP_TOKEN }),
      ...(s.CODEXEC_HTTP_TOKENS && { tokensFile: expandHome(s.CODEXEC_HTTP_TOKENS, home) }),
      allowedOrigins: (s.CODEXEC_HTTP_ALLOWED_ORIGINS ?? []).map((origin) =>
        origin.replace(/\/+$/, '').toLowerCase(),
      ),
      admins: s.CODEXEC_HTTP_ADMINS ?? [],
      approvers: s.CODEXEC_HTTP_APPROVERS ?? s.CODEXEC_HTTP_ADMINS ?? [],
      maxBodyBytes: s.CODEXEC_HTTP_MAX_BODY_BYTES ?? s.CODEXEC_MAX_MESSAGE_BYTES,
      maxInflightBytes:
        s.CODEXEC_HTTP_MAX_INFLIGHT_BYTES ??
        2 * (s.CODEXEC_HTTP_MAX_BODY_BYTES ?? s.CODEXEC_MAX_MESSAGE_BYTES),
      maxConnections: s.CODEXEC_HTTP_MAX_CONNECTIONS,
      maxConnectionsPerAddress: s.CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: s.CODEXEC_HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: s.CODEXEC_HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: s.CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS,
      metricsPublic: s.CODEXEC_METRICS_PUBLIC,
    },
    taskTtlMs: s.CODEXEC_TASK_TTL_MS,
    store: s.CODEXEC_STORE === 'sqlite' ? { kind: 'sqlite' } : { kind: 'postgres', url: s.CODEXEC_STORE },
    ...(s.CODEXEC_APPROVAL_KEY_FILE && { approvalKeyFile: expandHome(s.CODEXEC_APPROVAL_KEY_FILE, home) }),
    ...(s.CODEXEC_ADVERTISE_URL && { advertiseUrl: s.CODEXEC_ADVERTISE_URL.replace(/\/+$/, '') }),
    ...(s.CODEXEC_QUOTAS && { quotas: readQuotas(expandHome(s.CODEXEC_QUOTAS, home)) }),
    gate: {
      enabled: s.CODEXEC_ENABLED,
      approval: s.CODEXEC_APPROVAL,
      approver: s.CODEXEC_APPROVER,
      approvalTimeoutMs: s.CODEXEC_APPROVAL_TIMEOUT_MS,
      maxPendingApprovals: s.CODEXEC_MAX_PENDING_APPROVALS,
      maxPendingApprovalsPerPrincipal: Math.min(
        s.CODEXEC_MAX_PENDING_APPROVALS,
        s.CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL ?? Math.ceil(s.CODEXEC_MAX_PENDING_APPROVALS / 4),
      ),
      allowedRuntimes: s.CODEXEC_ALLOWED_RUNTIMES,
    },
  };
}

/**
 * Half the memory this server may use: the machine's RAM, or its own cgroup's limit when lower (a
 * container's). Half leaves the server, the host and the page cache room when every run is busy.
 */
function defaultTotalMemoryMb(): number {
  const constrained = process.constrainedMemory() || Number.POSITIVE_INFINITY;
  return Math.max(256, Math.floor(Math.min(totalmem(), constrained) / 2 / 1024 / 1024));
}

const configError = (message: string) => new ConfigError(message);

/** CODEXEC_TOOLS as names, or undefined for all of them; an unknown name stops start-up. */
function toolList(value: string): string[] | undefined {
  if (value === 'all') return undefined;
  if (value === 'codemode') return [...CODEMODE_TOOLS];
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(TOOL_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new ConfigError(
      `CODEXEC_TOOLS: no tool ${unknown.join(', ')} (all, codemode, or of: ${TOOL_NAMES.join(', ')})`,
    );
  }
  return names;
}

/** CODEXEC_MCP_CONFIG, else `$CODEXEC_HOME/mcp.json` when that exists (code mode is off without). */
function mcpConfigPath(value: string | undefined, codexecHome: string, home: string): string | undefined {
  if (value) return expandHome(value, home);
  const fallback = join(codexecHome, 'mcp.json');
  return existsSync(fallback) ? fallback : undefined;
}

function readConfigFile(path: string): RawSettings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError(`${path}: cannot read (${(error as Error).message})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`${path}: must be a JSON object of settings, e.g. {"CODEXEC_MAX_SESSIONS": 3}`);
  }
  const unknown = Object.keys(value).filter((key) => !(SETTING_NAMES as string[]).includes(key));
  if (unknown.length > 0) throw new ConfigError(`${path}: unknown setting ${unknown.join(', ')}`);
  return value as RawSettings;
}

/** The secrets file's values (one per line, trimmed, blank lines ignored), read only when redacting. */
function readSecrets(redact: boolean, file: string | undefined): Config['secrets'] {
  if (!redact || file === undefined) return { redact, ...(file && { file }), values: [] };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`CODEXEC_SECRETS_FILE: cannot read ${file} (${why})`);
  }
  const values = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return { redact, file, values };
}
