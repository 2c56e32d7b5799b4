import { basename, join } from 'node:path';
import {
  type ApprovalQueue,
  LocalSpentTickets,
  PendingApprovals,
  type SpentTickets,
  ViewApprovals,
} from '../approvals/index.js';
import type { AuditLog } from '../audit/index.js';
import { type Bridge, loadMcpConfig, McpBridge } from '../bridge/index.js';
import { type Config, globalPackageDirs, runRoots, sharedTrees } from '../config/index.js';
import { DiskQuota } from '../disk/index.js';
import { Credentials } from '../egress/index.js';
import { Engine, HeldMounts } from '../engine/index.js';
import type { ScriptLibrary } from '../library/index.js';
import type { ExpiredExecution, History, LogWriter } from '../logs/index.js';
import { type Metrics, NO_METRICS } from '../metrics/index.js';
import { SavedOutputs } from '../outputs/index.js';
import { type CheckContext, PackageService } from '../packages/index.js';
import {
  createSecretsFilter,
  HostDirs,
  loadRules,
  type RuleSet,
  type SecretsFilter,
} from '../policy/index.js';
import { WorkspaceRetention } from '../pool/index.js';
import type { RunQuotas } from '../quotas/index.js';
import { openRecords } from '../records/index.js';
import { Interpreters } from '../runtimes/index.js';
import {
  BackendRegistry,
  NamespaceBackend,
  type SandboxBackend,
  SubprocessBackend,
} from '../sandbox/index.js';
import { SessionManager } from '../sessions/index.js';
import { loadApprovalKey, NonceLedger, type Postgres } from '../store/index.js';
import { Tasks } from '../tasks/index.js';
import type { Tracing } from '../traces/index.js';
import { currentPrincipal, log } from '../util/index.js';
import type { RunFeed } from './feed.js';
import { RunSlots } from './slots.js';

/**
 * The long-lived parts shared by every connection. Creating them does no I/O beyond reading
 * `$CODEXEC_HOME/policy.json` (a bad one stops start-up with a ConfigError naming it); a postgres
 * store's modules are loaded then (asynchronously, hence the promise).
 */
export interface Services {
  readonly config: Config;
  readonly engine: Engine;
  readonly logs: LogWriter;
  /** Search, retrieval and retention over the logs (index.db, or the store's tables, on first use). */
  readonly history: History;
  /** Output past the truncation cap, kept for paging (CODEXEC_MAX_SAVED_OUTPUT_BYTES). */
  readonly outputs: SavedOutputs;
  /** Saved scripts: one library per principal (`scripts.of(principal)`). */
  readonly scripts: ScriptLibrary;
  readonly packageCheck: CheckContext;
  readonly packages: PackageService;
  /** Disk of the workspaces, per workspace and per principal (runs and sessions share it). */
  readonly disk: DiskQuota;
  /** Removes kept run workspaces after CODEXEC_WORKSPACE_RETENTION_HOURS (start() to begin). */
  readonly workspaces: WorkspaceRetention;
  /**
   * The host directories live runs and sessions work in (CODEXEC_ALLOWED_PATHS), held by
   * descriptor: the one way a caller's working_dir or work_dir is opened.
   */
  readonly hostDirs: HostDirs;
  /** CODEXEC_MOUNTS: the operator's directories lent read-only, held by descriptor (undefined: none). */
  readonly mounts: HeldMounts | undefined;
  /** Persistent REPL sessions; their owner kills them all on shutdown. */
  readonly sessions: SessionManager;
  /** The policy rules: built-ins with policy.json's overrides and extras. */
  readonly rules: RuleSet;
  /**
   * The audit trail: one hash-chained entry per attempt to run code (allowed, refused, denied);
   * daily files, or with a postgres store this replica's chain in the shared table.
   */
  readonly audit: AuditLog;
  /** CODEXEC_MAX_CONCURRENT_RUNS: the slots every tool that runs code holds while it runs. */
  readonly slots: RunSlots;
  /** CODEXEC_QUOTAS: per-principal quotas of runs and sessions (undefined: none configured). */
  readonly quotas: RunQuotas | undefined;
  /** CODEXEC_MAX_PENDING_APPROVALS: approvals waiting for an answer, all connections together. */
  readonly pendingApprovals: PendingApprovals;
  /** The questions a client is asked, as its MCP Apps result view shows and answers them. */
  readonly viewApprovals: ViewApprovals;
  /**
   * Signs approval tickets (2026 era), whatever serves the request: CODEXEC_APPROVAL_KEY_FILE's
   * (every replica verifies what another minted), else one random key per server process.
   */
  readonly approvalKey: Uint8Array;
  /** 2026-era approval tickets already answered: this server's, or every replica's (the store). */
  readonly spentTickets: SpentTickets;
  /** CODEXEC_STORE=postgres://…: the shared database (connects on first use); sqlite: undefined. */
  readonly store?: Postgres;
  /** Code mode: the downstream MCP servers of CODEXEC_MCP_CONFIG (none configured: an empty bridge). */
  readonly bridge: Bridge;
  /** MCP Tasks: work handed back as a task, recorded in tasks.db (opened on first use) or the store. */
  readonly tasks: Tasks;
  /** The secrets filter (CODEXEC_REDACT_SECRETS): undefined when switched off. */
  readonly secrets: SecretsFilter | undefined;
  /**
   * What the user trusted (approve_trust_session), kept beyond one MCP server instance: serve
   * --http sets one per principal. Absent: each instance (stdio: the connection) has its own.
   */
  readonly trusted?: Set<string>;
  /** Runs, approvals and waits as they happen: serve --http's registry, else NO_METRICS. */
  readonly metrics: Metrics;
  /** OTEL_EXPORTER_OTLP_ENDPOINT set: a span per tool call (absent: nothing traced). */
  readonly tracing?: Tracing | undefined;
  /** serve --http: the runs in progress and recent ones, for the dashboard (stdio has none). */
  readonly feed?: RunFeed;
  /** serve --http: approvals waiting for the dashboard (CODEXEC_APPROVER=dashboard or both). */
  readonly approvals?: ApprovalQueue;
}

/** What the server made before its services, when it made them (metrics, tracing). */
export interface Observers {
  readonly metrics?: Metrics;
  readonly tracing?: Tracing | undefined;
}

/**
 * Every service, made in one pass: the records (logs, audit, tasks, scripts, quotas: on the store
 * when there is one), the runners (engine, sessions, packages) over them, and the gate's parts.
 */
export async function createServices(config: Config, observers: Observers = {}): Promise<Services> {
  const approvalKey = loadApprovalKey(config.approvalKeyFile);
  const outputs = new SavedOutputs(config.home, config.maxSavedOutputBytes);
  const records = await openRecords(config, {
    approvalKey,
    // Saved output lives as long as its execution's log entry.
    onExpired: (expired: readonly ExpiredExecution[]) => outputs.remove(expired),
  });
  const { store, history, quotas } = records;
  const logs = history.writer;
  const { downstream, ...runners } = createRunners(config, { logs, outputs, quotas });
  return {
    config,
    ...runners,
    workspaces: createWorkspaces(config, runners.disk, history),
    logs,
    history,
    outputs,
    scripts: records.scripts,
    quotas,
    ...gateParts(config),
    audit: records.audit,
    approvalKey,
    spentTickets: store ? new NonceLedger(store) : new LocalSpentTickets(),
    ...(store && { store }),
    tasks: new Tasks({ ttlMs: config.taskTtlMs, store: records.tasks }),
    metrics: observers.metrics ?? NO_METRICS,
    tracing: observers.tracing,
    bridge: new McpBridge(downstream, {
      rateLimitPerMinute: config.codemode.rateLimitPerMinute,
      maxToolCallRecords: config.codemode.maxToolCallRecords,
      cacheFile: join(config.home, 'cache', 'mcp-tools.json'),
    }),
  };
}

/** What runs code (the engine, sessions, installs) and what every run shares (secrets, disk). */
function createRunners(
  config: Config,
  records: {
    readonly logs: LogWriter;
    readonly outputs: SavedOutputs;
    readonly quotas: RunQuotas | undefined;
  },
) {
  const { logs, outputs, quotas } = records;
  const interpreters = new Interpreters(config.interpreters);
  const namespace = new NamespaceBackend({
    idleMs: config.pool.idleMs,
    totals: config.totals,
    roots: runRoots(config),
    workspaceDirs: [config.sandboxDir],
    sharedTrees: sharedTrees(config),
  });
  const backends = new BackendRegistry(config.sandboxMode, namespace, config.docker);
  // CODEXEC_CREDENTIALS: values read now (a bad file stops the start); the CA is made meanwhile.
  const credentials = config.credentials.length > 0 ? new Credentials(config.credentials, config) : undefined;
  // Built once: the secrets are the server's own environment's and the secrets file's at start-up,
  // and the credentials' values (which no sandbox holds: a mask should never have work to do).
  const values = [
    ...config.secrets.values,
    ...(credentials?.all.map((credential) => credential.value) ?? []),
  ];
  const secrets = createSecretsFilter({ ...config.secrets, values }, process.env);
  // One account of the disk for runs and sessions: a principal's quota spans both.
  const disk = new DiskQuota(config.disk);
  const downstream = config.codemode.mcpConfig ? loadMcpConfig(config.codemode.mcpConfig) : new Map();
  // Downstream servers configured: every python/node run has discovery, warm ones too.
  const codeMode = downstream.size > 0;
  const mounts = config.mounts.length > 0 ? new HeldMounts(config) : undefined;
  const engine = new Engine({
    config,
    backends,
    interpreters,
    logs,
    secrets,
    disk,
    codeMode,
    outputs,
    mounts,
    credentials,
  });
  const sessions = new SessionManager({
    config,
    backends,
    interpreters,
    logs,
    secrets,
    disk,
    outputs,
    quotas,
    mounts,
    credentials,
  });
  const packages = new PackageService(
    config,
    interpreters,
    logs,
    () => installSandbox(backends, namespace),
    () => engine.refreshPool(),
    secrets,
  );
  packages.attachSessions(sessions);
  const packageCheck = packageCheckOf(config, interpreters);
  return {
    engine,
    disk,
    sessions,
    packages,
    packageCheck,
    secrets,
    downstream,
    mounts,
    hostDirs: new HostDirs(config),
  };
}

/** Where an install looks for what is installed: the caller's own global environment. */
function packageCheckOf(config: Config, interpreters: Interpreters): CheckContext {
  return {
    python: () => interpreters.get('python'),
    // Read per check: a principal's request.
    get pythonPath() {
      return [globalPackageDirs(config, currentPrincipal()).python];
    },
    get nodeModules() {
      return [globalPackageDirs(config, currentPrincipal()).nodeModules];
    },
  };
}

/** Workspaces kept past their run, removed when old; the disk account follows them. */
function createWorkspaces(config: Config, disk: DiskQuota, history: History): WorkspaceRetention {
  return new WorkspaceRetention({
    sandboxDir: config.sandboxDir,
    maxAgeMs: config.disk.retentionMs,
    inUse: (dir) => disk.inUse(dir),
    onRemoved: (dir) => disk.forget(dir),
    // An earlier server's kept workspaces count for whoever ran them (the execution log says).
    onKept: async (dir) => {
      if (disk.inUse(dir) || disk.knows(dir)) return;
      const principal = await history.principalOf(basename(dir)).catch(() => undefined);
      if (principal !== undefined) await disk.measure(dir, principal).catch(() => {});
    },
  });
}

/** What the gate holds: the rules, the run slots, and the approvals waiting. */
function gateParts(config: Config) {
  return {
    rules: loadRules(config),
    slots: new RunSlots({
      running: config.runs.maxConcurrent,
      queued: config.runs.maxQueued,
      waitMs: config.runs.queueTimeoutMs,
    }),
    pendingApprovals: new PendingApprovals(
      config.gate.maxPendingApprovals,
      config.gate.maxPendingApprovalsPerPrincipal,
    ),
    viewApprovals: new ViewApprovals(),
  };
}

/**
 * Where installs run packages' scripts and place their results: the code's sandbox; in docker
 * mode (whose sessions install inside their own container) the namespace sandbox where it works.
 */
async function installSandbox(
  backends: BackendRegistry,
  namespace: NamespaceBackend,
): Promise<SandboxBackend> {
  const backend = await backends.get();
  if (!backend.capabilities.ownInterpreters) return backend;
  return (await namespace.probe()).available ? namespace : new SubprocessBackend();
}

/** Stop every run and session (each answers as cancelled), and wait until they are gone. */
export async function stopWork(services: Services): Promise<void> {
  // The spans of calls answered already leave now, while the runs stop: a stop that outlasts the
  // client's patience (it kills the server) must not take them with it.
  services.tracing?.flush().catch((error: Error) => log('warn', `traces: ${error.message}`));
  services.slots.close(); // calls waiting for a slot are refused, not started on a stopping engine
  await services.tasks.shutdown(); // before the engine: a task's end is recorded as a shutdown
  await services.workspaces.stop();
  await services.sessions.shutdown();
  await services.engine.shutdown();
  await services.bridge.close();
}

/** Write out what is pending (logs, audit entries and anchor) and close the search index. */
export async function closeRecords(services: Services): Promise<void> {
  await services.logs.flush();
  await services.audit.close();
  await services.history.close();
  await services.tasks.close();
  await services.store?.close();
  // Spans still batched go out now (a collector that does not answer costs its export timeout).
  await services.tracing?.shutdown().catch((error: Error) => log('warn', `traces: ${error.message}`));
}
