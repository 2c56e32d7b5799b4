// What a session's send says beyond its output: whether the session takes it now, the files its
// cell left, the exit code and the sentence of a session that died under it, its log line.
import { constants } from 'node:os';
import type { Config } from '../config/index.js';
import {
  type ArtifactDiff,
  collectImages,
  diffSnapshots,
  limitNote,
  listArtifacts,
  type NamedLimits,
  type Snapshot,
  snapshotDir,
} from '../engine/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { Language } from '../runtimes/index.js';
import type { Exit, LimitKind, SandboxedProcess } from '../sandbox/index.js';
import type { HeldDir } from '../util/index.js';
import { isoTime } from '../util/index.js';
import type { EndReason, SendRequest, SendResult } from './types.js';

export function describeExit(exit: Exit): string {
  if (exit.spawnError) return exit.spawnError.message;
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

/**
 * Refuses a send the session cannot take now: input or an interrupt when no cell waits for input
 * (`cell`: the cell sent and not ended), or code while one does.
 */
export function assertTurn(
  sessionId: string,
  request: SendRequest,
  cell: { readonly waitingForInput: boolean } | undefined,
): void {
  const answers = request.code === undefined; // input or interrupt
  if (answers && !cell?.waitingForInput) {
    throw new InvalidInputError(
      `session ${sessionId} is not waiting for input (input and interrupt answer a send that returned ` +
        'waiting_for_input); to write to its stdin anyway use write_stdin {session_id, data}',
    );
  }
  if (!answers && cell) {
    throw new InvalidInputError(
      `session ${sessionId} is waiting for input to the code it runs; answer it with send_to_session ` +
        '{session_id, input}, interrupt it with {session_id, interrupt: true}, or end the session with kill_session',
    );
  }
}

/** Why a driver that exited during start-up did not start. */
export function startFailure(exit: Exit): string {
  return exit.spawnError
    ? `could not be started (${exit.spawnError.message})`
    : `exited during start-up (${describeExit(exit)})`;
}

/** The exit code of a driver that died under a send: none where the server killed it. */
export function exitCodeOf(exit: Exit, killedByServer: boolean): number | null {
  if (killedByServer) return null;
  return exit.code ?? (exit.signal ? 128 + (constants.signals[exit.signal] ?? 0) : null);
}

/**
 * The limit of its sandbox a session's process died at (memory, processes, CPU time), and what to
 * call it: the first part of a one-shot's note (where it is used says what followed).
 */
export function diedAt(
  exit: Exit,
  proc: Pick<SandboxedProcess, 'limitHit' | 'limitDetail'>,
  limits: NamedLimits,
): { readonly kind: LimitKind; readonly note: string } | undefined {
  const kind = exit.limit ?? proc.limitHit?.();
  if (!kind) return undefined;
  const sentence = proc.limitDetail?.(kind) ?? limitNote(kind, limits);
  return { kind, note: sentence.split('; ')[0] ?? sentence };
}

export interface Death {
  readonly language: Language;
  readonly killGraceMs: number;
  /** The code did not stop within the kill grace period of an interrupt. */
  readonly killedAfterInterrupt: boolean;
  /** The sentence of the bound (the disk watcher's) that ended the session. */
  readonly limitNote: string | undefined;
  readonly endReason: EndReason | undefined;
}

/** The `error` of a send whose session ended under it. */
export function deathMessage(exit: Exit, death: Death): string {
  const lost = 'the session has ended and its state is lost; start a new one with start_session';
  if (death.killedAfterInterrupt)
    return `the code did not stop within ${death.killGraceMs} ms of the interrupt, so the session's process was killed; ${lost}`;
  if (death.limitNote) return `${death.limitNote}, so the session was killed; ${lost}`;
  if (death.endReason === 'closed') return 'the session was closed while this code was running';
  if (death.endReason) return `the session was stopped (${death.endReason}) while this code was running`;
  return `the ${death.language} process exited (${describeExit(exit)}) while running this code; ${lost}`;
}

export interface SessionFacts {
  readonly id: string;
  readonly language: Language;
  readonly sandboxMode: string;
  readonly cwd: string;
}

export interface SendFacts {
  readonly code: string;
  readonly result: SendResult;
  readonly artifacts: ArtifactDiff;
  readonly started: number;
  readonly stdin: string | null;
}

/** The seed's session `execution` line (plus language, flags, sandbox mode, artifacts). */
export function executionLine(session: SessionFacts, send: SendFacts): Record<string, unknown> {
  const { result } = send;
  return {
    type: 'execution',
    execution_id: result.execution_id,
    session_id: session.id,
    language: session.language,
    code: send.code,
    stdin: send.stdin,
    stdout: result.stdout,
    stderr: result.stderr,
    exit_code: result.exit_code,
    timed_out: result.timed_out,
    cancelled: result.cancelled,
    duration_ms: result.duration_ms,
    sandbox_mode: session.sandboxMode,
    working_dir: session.cwd,
    artifacts: send.artifacts,
    ...(result.artifacts_omitted && { artifacts_omitted: result.artifacts_omitted }),
    ...(result.waiting_for_input && { waiting_for_input: true, prompt: result.prompt }),
    at: isoTime(send.started),
  };
}

/** A send that ran no cell to its end (a syntax error, a wait for input): its output so far. */
export function unrunResult(
  base: Pick<SendResult, 'execution_id' | 'session_id' | 'language'>,
  collected: Pick<SendResult, 'stdout' | 'stderr' | 'truncated' | 'output_saved'>,
  started: number,
): SendResult {
  return {
    ...base,
    ...collected,
    success: false,
    exit_code: null,
    duration_ms: Date.now() - started,
    timed_out: false,
    cancelled: false,
    artifacts: [],
    artifacts_deleted: [],
    session_alive: true,
    images: [],
  };
}

/** What a cell left in the session's directory: its artifacts listed, its pictures collected. */
export async function sendFiles(
  cell: { readonly before: Snapshot; readonly ownWorkspace: boolean },
  session: {
    readonly config: Config;
    readonly dir: HeldDir;
    readonly secrets?: SecretsFilter | undefined;
    readonly figuresWorkspace?: string | undefined;
  },
) {
  const { config, dir } = session;
  const diff = diffSnapshots(cell.before, await snapshotDir(dir, { ownWorkspace: cell.ownWorkspace }));
  const listed = listArtifacts(diff, config.artifacts, session.secrets);
  const pictures = await collectImages({
    workspace: session.figuresWorkspace,
    workingDir: dir,
    artifacts: listed.plain,
    maxBytes: config.maxImageBytes,
  });
  return { listed, pictures };
}
