import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { AuditTrail } from '../audit/index.js';
import { type Bridge, loadMcpConfig, McpBridge } from '../bridge/index.js';
import { type Config, globalPackageDirs } from '../config/index.js';
import { Engine } from '../engine/index.js';
import { ScriptStore } from '../library/index.js';
import { ExecutionLogs, type LogWriter } from '../logs/index.js';
import { type CheckContext, PackageService } from '../packages/index.js';
import { createSecretsFilter, loadRules, type RuleSet, type SecretsFilter } from '../policy/index.js';
import { Interpreters } from '../runtimes/index.js';
import { BackendRegistry, NamespaceBackend } from '../sandbox/index.js';
import { SessionManager } from '../sessions/index.js';

/**
 * The long-lived parts shared by every connection. Creating them does no I/O beyond reading
 * `$CODEXEC_HOME/policy.json` (a bad one stops start-up with a ConfigError naming it).
 */
export interface Services {
  readonly config: Config;
  readonly engine: Engine;
  readonly logs: LogWriter;
  /** Search, retrieval and retention over the logs (opens index.db on first use). */
  readonly history: ExecutionLogs;
  readonly scripts: ScriptStore;
  readonly packageCheck: CheckContext;
  readonly packages: PackageService;
  /** Persistent REPL sessions; their owner kills them all on shutdown. */
  readonly sessions: SessionManager;
  /** The policy rules: built-ins with policy.json's overrides and extras. */
  readonly rules: RuleSet;
  /** The audit trail: one hash-chained entry per attempt to run code (allowed, refused, denied). */
  readonly audit: AuditTrail;
  /** Signs approval tickets (2026 era): one key per server process, whatever serves the request. */
  readonly approvalKey: Uint8Array;
  /** Code mode: the downstream MCP servers of CODEXEC_MCP_CONFIG (none configured: an empty bridge). */
  readonly bridge: Bridge;
  /** The secrets filter (CODEXEC_REDACT_SECRETS): undefined when switched off. */
  readonly secrets: SecretsFilter | undefined;
  /**
   * What the user trusted (approve_trust_session), kept beyond one MCP server instance: serve
   * --http sets one per principal. Absent: each instance (stdio: the connection) has its own.
   */
  readonly trusted?: Set<string>;
}

export function createServices(config: Config): Services {
  const history = new ExecutionLogs({
    logDir: config.logDir,
    indexPath: join(config.home, 'index.db'),
    retentionDays: config.retentionDays,
  });
  const logs = history.writer;
  const interpreters = new Interpreters(config.interpreters);
  const backends = new BackendRegistry(
    config.sandboxMode,
    new NamespaceBackend({ idleMs: config.pool.idleMs }),
    config.docker,
  );
  // Built once: the secrets are the server's own environment's and the secrets file's at start-up.
  const secrets = createSecretsFilter(config.secrets, process.env);
  const downstream = config.codemode.mcpConfig ? loadMcpConfig(config.codemode.mcpConfig) : new Map();
  // Downstream servers configured: every python/node run has discovery, warm ones too.
  const engine = new Engine({ config, backends, interpreters, logs, secrets, codeMode: downstream.size > 0 });
  const sessions = new SessionManager({ config, backends, interpreters, logs, secrets });
  const packageCheck: CheckContext = {
    python: () => interpreters.get('python'),
    pythonPath: [globalPackageDirs(config).python],
    nodeModules: [globalPackageDirs(config).nodeModules],
  };
  const packages = new PackageService(config, interpreters, logs, () => engine.refreshPool(), secrets);
  packages.attachSessions(sessions);
  return {
    config,
    engine,
    logs,
    history,
    scripts: new ScriptStore(config.scriptsDir),
    packageCheck,
    packages,
    sessions,
    rules: loadRules(config),
    audit: new AuditTrail({ dir: config.logDir, retentionDays: config.auditRetentionDays }),
    approvalKey: randomBytes(32),
    secrets,
    bridge: new McpBridge(downstream, {
      rateLimitPerMinute: config.codemode.rateLimitPerMinute,
      maxToolCallRecords: config.codemode.maxToolCallRecords,
      cacheFile: join(config.home, 'cache', 'mcp-tools.json'),
    }),
  };
}

/** Stop every run and session (each answers as cancelled), and wait until they are gone. */
export async function stopWork(services: Services): Promise<void> {
  await services.sessions.shutdown();
  await services.engine.shutdown();
  await services.bridge.close();
}

/** Write out what is pending (logs, audit entries) and close the search index. */
export async function closeRecords(services: Services): Promise<void> {
  await services.logs.flush();
  await services.audit.flush();
  await services.history.close();
}
