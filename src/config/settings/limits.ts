import { totalmem } from 'node:os';
import { z } from 'zod';
import { from, setting } from './define.js';
import { int } from './values.js';

// How long, how much and how many: timeouts, output caps, sizes, and the bounds on sessions, runs,
// memory, processes and disk.

const maxSessions = setting('CODEXEC_MAX_SESSIONS', () =>
  int(1, 1000).default(5).describe('Sessions one principal may run at once.'),
);
const maxSessionsTotal = setting('CODEXEC_MAX_SESSIONS_TOTAL', () =>
  int(1, 100_000)
    .optional()
    .describe('Sessions all principals together may run at once; default 4 x CODEXEC_MAX_SESSIONS.'),
);
/** Largest JSON-RPC message a transport reads whole; serve --http's body limit follows it. */
export const maxMessageBytes = setting('CODEXEC_MAX_MESSAGE_BYTES', () =>
  int(1024, 500_000_000)
    .default(64 * 1024 * 1024)
    .describe(
      'Largest JSON-RPC message read whole; larger ones are refused by id. Default 64 MiB: ' +
        'the largest code (10 MB) JSON-escaped at worst (6x, all control characters) fits.',
    ),
);
const totalMemoryMb = setting('CODEXEC_TOTAL_MEMORY_MB', () =>
  int(16, 16_777_216)
    .optional()
    .describe(
      'Memory of all runs, sessions and warm interpreters together (one parent cgroup, namespace ' +
        "mode); default half the machine's RAM (or of the server's own memory limit).",
    ),
);

/** Timeouts and the sizes of what goes in and comes out of a run. */
export const runLimits = {
  defaultTimeoutMs: setting('CODEXEC_DEFAULT_TIMEOUT_MS', () =>
    int(1, 86_400_000).default(30_000).describe('Timeout when a call gives none.'),
  ),
  maxTimeoutMs: setting('CODEXEC_MAX_TIMEOUT_MS', () =>
    int(1, 86_400_000).default(300_000).describe('Upper clamp for any timeout.'),
  ),
  sessionIdleTimeoutMs: setting('CODEXEC_SESSION_IDLE_TIMEOUT_MS', () =>
    int(1000, 604_800_000).default(900_000).describe('Idle session kill.'),
  ),
  killGraceMs: setting('CODEXEC_KILL_GRACE_MS', () =>
    int(0, 60_000).default(5000).describe('SIGTERM to SIGKILL grace period.'),
  ),
  output: {
    maxChars: setting('CODEXEC_MAX_OUTPUT_CHARS', () =>
      int(100, 100_000_000).default(10_000).describe('Per-stream output cap.'),
    ),
    head: setting('CODEXEC_TRUNCATION_HEAD', () =>
      int(0, 100_000_000).default(4000).describe('Characters kept from the start.'),
    ),
    tail: setting('CODEXEC_TRUNCATION_TAIL', () =>
      int(0, 100_000_000).default(4000).describe('Characters kept from the end.'),
    ),
  },
  maxCodeBytes: setting('CODEXEC_MAX_CODE_BYTES', () =>
    int(1, 100_000_000).default(10_000_000).describe('Largest code accepted.'),
  ),
  /** Largest figure or image file a result carries as image content. */
  maxImageBytes: setting('CODEXEC_MAX_IMAGE_BYTES', () =>
    int(0, 100_000_000)
      .default(2 * 1024 * 1024)
      .describe('Largest figure or image file returned as MCP image content (0: none).'),
  ),
  /** File names a result lists, and their bytes together. */
  artifacts: {
    maxEntries: setting('CODEXEC_MAX_ARTIFACTS', () =>
      int(0, 100_000)
        .default(200)
        .describe(
          'File names one result (and its log entry) lists in artifacts and artifacts_deleted together; the rest are counted in artifacts_omitted.',
        ),
    ),
    maxBytes: setting('CODEXEC_MAX_ARTIFACT_BYTES', () =>
      int(0, 100_000_000)
        .default(64 * 1024)
        .describe(
          'UTF-8 bytes of the file names one result lists, together; the rest are counted in artifacts_omitted.',
        ),
    ),
  },
  /** write_file / read_file: the largest file moved in or out. */
  maxFileTransferBytes: setting('CODEXEC_MAX_FILE_TRANSFER_BYTES', () =>
    int(1, 1_073_741_824)
      .default(5_242_880)
      .describe('Largest file write_file accepts or read_file returns (bytes).'),
  ),
  /** Bytes of each stream of a truncated run kept on disk for paging (0: none). */
  maxSavedOutputBytes: setting('CODEXEC_MAX_SAVED_OUTPUT_BYTES', () =>
    int(0, 1_073_741_824)
      .default(64 * 1024 * 1024)
      .describe(
        "Bytes of a run's stdout and of its stderr kept on disk when the result truncates them, paged with read_file {execution_id, path} (0: none kept). A principal keeps at most 16 times this in all; the oldest go first.",
      ),
  ),
  maxMessageBytes,
};

/** How many sessions, processes and runs at once, and what each may use of the machine. */
export const capacity = {
  /** Sessions per principal (CODEXEC_MAX_SESSIONS) and for all of them together. */
  maxSessions,
  maxSessionsTotal: from(
    [maxSessionsTotal, maxSessions],
    ([total, perPrincipal]) => total ?? 4 * perPrincipal,
  ),
  /** Background processes: how many one session may have, and the output kept of each. */
  processes: {
    perSession: setting('CODEXEC_MAX_PROCESSES_PER_SESSION', () =>
      int(0, 1000)
        .default(16)
        .describe(
          'Background processes (start_process) one session may have at once, running or not yet read; 0: none.',
        ),
    ),
    outputBytes: setting('CODEXEC_MAX_PROCESS_OUTPUT_BYTES', () =>
      int(4096, 1 << 30)
        .default(4 * 1024 * 1024)
        .describe(
          'Output kept per background process: its last bytes (read_process_output says what was dropped).',
        ),
    ),
  },
  /** Runs at once server-wide, calls that may wait for one, and for how long. */
  runs: {
    maxConcurrent: setting('CODEXEC_MAX_CONCURRENT_RUNS', () =>
      int(1, 10_000)
        .default(8)
        .describe(
          'Runs (execute_code, execute_command, run_script, send_to_session, install_package) at once, server-wide.',
        ),
    ),
    maxQueued: setting('CODEXEC_MAX_QUEUED_RUNS', () =>
      int(0, 100_000)
        .default(64)
        .describe('Calls that may wait for a run slot; past it they are refused LIMIT_REACHED at once.'),
    ),
    queueTimeoutMs: setting('CODEXEC_QUEUE_TIMEOUT_MS', () =>
      int(0, 86_400_000)
        .default(30_000)
        .describe('How long a call waits for a run slot before it is refused LIMIT_REACHED.'),
    ),
  },
  pool: {
    size: setting('CODEXEC_POOL_SIZE', () =>
      int(0, 64).default(2).describe('Warm interpreters kept per language; 0 disables.'),
    ),
    idleMs: setting('CODEXEC_POOL_IDLE_MS', () =>
      int(1000, 86_400_000)
        .default(300_000)
        .describe('Warm pool (and pre-started launchers) emptied after this idle time.'),
    ),
    memoryMb: setting('CODEXEC_POOL_MEMORY_MB', () =>
      int(0, 1_048_576)
        .default(512)
        .describe('Memory all waiting warm interpreters together may use; the pool starts no more.'),
    ),
  },
  installTimeoutMs: setting('CODEXEC_INSTALL_TIMEOUT_MS', () =>
    int(1000, 3_600_000).default(300_000).describe('Limit for one package install.'),
  ),
  limits: {
    memoryMb: setting('CODEXEC_MEMORY_MB', () =>
      int(16, 1_048_576).default(512).describe('Memory limit per execution.'),
    ),
    maxProcs: setting('CODEXEC_MAX_PROCS', () =>
      int(1, 100_000).default(256).describe('Process limit per execution.'),
    ),
    maxFileMb: setting('CODEXEC_MAX_FILE_MB', () =>
      int(1, 1_048_576).default(1024).describe('Largest file code may write.'),
    ),
  },
  /** All runs together (one parent cgroup). */
  totals: {
    memoryMb: from([totalMemoryMb], ([memoryMb]) => memoryMb ?? defaultTotalMemoryMb()),
    maxProcs: setting('CODEXEC_TOTAL_MAX_PROCS', () =>
      int(1, 4_194_304)
        .default(4096)
        .describe('Processes of all runs, sessions and warm interpreters together (one parent cgroup).'),
    ),
  },
  /** Disk: per workspace, per principal (MB), and how long a kept workspace lives (ms). */
  disk: {
    workspaceMb: setting('CODEXEC_MAX_WORKSPACE_MB', () =>
      int(1, 16_777_216)
        .default(1024)
        .describe("Disk one run's or session's workspace may use; past it the run is killed (limit disk)."),
    ),
    principalMb: setting('CODEXEC_MAX_PRINCIPAL_DISK_MB', () =>
      int(1, 16_777_216)
        .default(4096)
        .describe(
          "Disk all of one principal's workspaces may use; past it its runs and sessions are refused.",
        ),
    ),
    retentionMs: setting('CODEXEC_WORKSPACE_RETENTION_HOURS', () =>
      z.coerce
        .number()
        .positive()
        .max(87_600)
        .default(24)
        .transform((hours) => Math.round(hours * 3_600_000))
        .describe('Workspaces runs left files in are removed this long after their last change.'),
    ),
  },
};

/**
 * Half the memory this server may use: the machine's RAM, or its own cgroup's limit when lower (a
 * container's). Half leaves the server, the host and the page cache room when every run is busy.
 */
function defaultTotalMemoryMb(): number {
  const constrained = process.constrainedMemory() || Number.POSITIVE_INFINITY;
  return Math.max(256, Math.floor(Math.min(totalmem(), constrained) / 2 / 1024 / 1024));
}
