import { basename, join } from 'node:path';
import type { Config } from '../config/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { SecretsFilter } from '../policy/index.js';
import { isoTime, log, newId } from '../util/index.js';
import { ProcessNotFoundError, SessionLimitError } from './errors.js';
import { type OutputPage, ProcessOutput } from './process-output.js';
import type { ProcEvent } from './protocol.js';
import type { Session } from './session.js';

// Background processes of sessions (start_process, read_process_output, write_stdin, kill_process,
// list_processes). A process runs INSIDE its session's sandbox: the session's driver starts it
// (`bash -c command`, a process group of its own) when asked on its control channel and relays its
// output and exit there. So it shares the session's workspace, uid, cgroup (memory, pids), network
// rules and egress lane, and dies with the session's sandbox. A second sandbox on the host would
// have none of these, nor the session's files in /tmp. The python driver serves it from a thread
// of its own, the node driver from its event loop (held by a cell that blocks the loop); a bash
// session's by its host in front of the driver, with the Python driver's code (bash-host.ts).
//
// stdout and stderr share one pipe: a server's or watcher's log reads in the order it was written,
// and one offset pages through it. The server keeps the last CODEXEC_MAX_PROCESS_OUTPUT_BYTES.

/** What a background process is, for its tools (wire names). */
export interface ProcessInfo {
  process_id: string;
  session_id: string;
  command: string;
  /** Its pid in the sandbox (its process group's id); null until started. */
  pid: number | null;
  running: boolean;
  /** null while running, or when it was killed by a signal. */
  exit_code: number | null;
  /** The signal that ended it (`SIGKILL` when killed, or ended with its session). */
  signal: string | null;
  started_at: string;
  /** Bytes of output it wrote (masked), all of it, kept or not. */
  output_bytes: number;
  /** start_process expose_port: the port of the session's loopback served through the server. */
  exposed_port?: number;
}

interface Entry {
  readonly info: ProcessInfo;
  readonly principal: string;
  readonly session: Session;
  readonly output: ProcessOutput;
  stdinClosed: boolean;
  /** Its exposed port's socket in the session's workspace, which the forwarder listens on. */
  readonly socket?: string;
  /** Resolved when the driver answers proc_start (pid or error) and when the process exits. */
  started: Deferred<string | undefined>;
  exited: Deferred<void>;
}

/** How long the driver gets to answer a start or a kill. */
const ANSWER_MS = 10_000;
/** The most one read returns; `more` says there is more. */
export const READ_MAX_BYTES = 1024 * 1024;
/** How many ended processes' ids are remembered, to say why a late call finds nothing. */
const TOMBSTONES = 200;

/** An exposed port's socket in a session's workspace: `.codexec-port-<port>.sock`. */
export const PORT_SOCKET_PREFIX = '.codexec-port-';

/** Words for bash, each single-quoted. */
const shellWords = (words: readonly string[]) =>
  words.map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(' ');

/** Stray process errors logged per session. */
const MAX_ERRORS_LOGGED = 5;

export class ProcessTable {
  private readonly entries = new Map<string, Entry>();
  /** How many of a session's stray process errors were logged (its code can write them at will). */
  private readonly errorsLogged = new WeakMap<Session, number>();
  private readonly ended = new Map<string, string>();

  constructor(
    private readonly config: Config,
    private readonly secrets: SecretsFilter | undefined,
    /** Writes a line of the session's log (`process_start`, `process_end`). */
    private readonly record: (sessionId: string, entry: Record<string, unknown>) => void,
  ) {}

  async start(session: Session, principal: string, command: string, expose?: number): Promise<ProcessInfo> {
    const { perSession } = this.config.processes;
    ProcessTable.assertHost(session);
    this.assertSize('command', command);
    const mine = [...this.entries.values()].filter((entry) => entry.session === session);
    const socket = expose === undefined ? undefined : this.exposing(session, mine, expose);
    if (mine.filter((entry) => entry.info.running).length >= perSession) {
      throw new SessionLimitError(
        `session ${session.id} already runs ${perSession} background processes, the most one session may ` +
          `run (CODEXEC_MAX_PROCESSES_PER_SESSION=${perSession}); stop one with kill_process`,
      );
    }
    this.forgetExited(mine, perSession);
    const id = newId('proc');
    const entry: Entry = {
      info: {
        process_id: id,
        session_id: session.id,
        command,
        pid: null,
        running: true,
        exit_code: null,
        signal: null,
        started_at: isoTime(),
        output_bytes: 0,
        ...(expose !== undefined && { exposed_port: expose }),
      },
      principal,
      session,
      ...(socket && { socket }),
      output: new ProcessOutput(this.config.processes.outputBytes, this.secrets?.stream()),
      stdinClosed: false,
      started: deferred(),
      exited: deferred(),
    };
    this.entries.set(id, entry);
    // An exposed port's forwarder starts first, in the background of the same process group: it
    // is killed with the process, and quiet (the output is the command's).
    const forwarder = socket ? session.options.forwarder : undefined;
    const background =
      forwarder && socket
        ? `${shellWords([...forwarder.argv, join(forwarder.workspace, basename(socket)), String(expose)])} </dev/null >/dev/null 2>&1 &\n`
        : '';
    session.control({ type: 'proc_start', proc: id, command: `${background}${command}` });
    const error = await within(
      entry.started.promise,
      ANSWER_MS,
      `the session did not answer within ${ANSWER_MS} ms (a node session answers between cells and while ` +
        'a cell awaits; a cell that keeps its event loop busy holds it)',
    );
    if (error !== undefined) {
      this.entries.delete(id);
      session.control({ type: 'proc_kill', proc: id }); // should it start late
      throw new InvalidInputError(`could not start the process: ${error}`);
    }
    this.record(session.id, { type: 'process_start', ...entry.info });
    return { ...entry.info };
  }

  /**
   * The socket an exposed `port` of `session` is served on (in its workspace), or the refusal: a
   * sandbox without a forwarder (landlock mode), a port out of range, one exposed already.
   */
  private exposing(session: Session, mine: readonly Entry[], port: number): string {
    if (!session.options.forwarder)
      throw new InvalidInputError(
        `expose_port needs a session whose sandbox has a loopback of its own (namespace or docker mode); this one is in ${session.options.sandboxMode} mode`,
      );
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new InvalidInputError(`expose_port must be a port, 1 to 65535, not ${port}`);
    if (mine.some((entry) => entry.info.running && entry.info.exposed_port === port))
      throw new InvalidInputError(
        `port ${port} of session ${session.id} is exposed already; kill that process first`,
      );
    return join(session.options.workspace, `${PORT_SOCKET_PREFIX}${port}.sock`);
  }

  /**
   * Where `principal`'s session `sessionId` serves `port` (a running process exposes it): the
   * forwarder's socket; undefined for anyone else, another port, or a process gone.
   */
  exposed(principal: string, sessionId: string, port: number): string | undefined {
    for (const entry of this.entries.values())
      if (
        entry.principal === principal &&
        entry.info.session_id === sessionId &&
        entry.info.running &&
        entry.info.exposed_port === port &&
        entry.session.alive
      )
        return entry.socket;
    return undefined;
  }

  /** Refuse a session whose driver does not serve background processes. */
  static assertHost(session: Session): void {
    if (session.options.hostsProcesses !== false) return;
    throw new InvalidInputError(
      `session ${session.id} cannot run background processes: its sandbox has no python3 for the bash ` +
        "session's host (drivers/bash_host.py); start a python session for them: the command is a shell " +
        'command (bash -c) whatever the session language',
    );
  }

  /**
   * A driver's error about no process of its: said on the log, quoted and cut, the first few of a
   * session only (code in the session can write such messages on the driver's channel).
   */
  private logError(session: Session, message: string): void {
    const logged = this.errorsLogged.get(session) ?? 0;
    this.errorsLogged.set(session, logged + 1);
    if (logged < MAX_ERRORS_LOGGED)
      log('warn', `session ${session.id}: process error: ${JSON.stringify(message.slice(0, 300))}`);
    else if (logged === MAX_ERRORS_LOGGED)
      log('warn', `session ${session.id}: further process errors are not logged`);
  }

  /** A message of the driver of `session` about one of its processes. */
  onEvent(session: Session, event: ProcEvent): void {
    const entry = event.proc === null ? undefined : this.entries.get(event.proc);
    if (!entry || entry.session !== session) {
      if (event.type === 'proc_error') this.logError(session, event.message);
      return; // a process forgotten since, or a driver naming another session's: ignored
    }
    if (event.type === 'proc_started') {
      entry.info.pid = event.pid;
      entry.started.resolve(undefined);
    } else if (event.type === 'proc_output') {
      entry.output.push(Buffer.from(event.data, 'base64'));
      entry.info.output_bytes = entry.output.end;
    } else if (event.type === 'proc_exit') {
      this.finish(entry, event.exit_code, event.signal);
    } else {
      entry.started.resolve(event.message);
    }
  }

  read(principal: string, id: string, offset: number): ProcessInfo & OutputPage {
    const entry = this.get(principal, id);
    return { ...entry.info, ...entry.output.read(offset, READ_MAX_BYTES) };
  }

  write(principal: string, id: string, data: string, eof: boolean): ProcessInfo & { bytes_written: number } {
    const entry = this.get(principal, id);
    this.assertSize('data', data);
    if (!entry.info.running) throw new InvalidInputError(`process ${id} has exited; nothing reads its stdin`);
    if (entry.stdinClosed) throw new InvalidInputError(`the stdin of process ${id} was closed (eof)`);
    entry.stdinClosed = eof;
    entry.session.control({
      type: 'proc_stdin',
      proc: id,
      data: Buffer.from(data, 'utf8').toString('base64'),
      eof,
    });
    return { ...entry.info, bytes_written: Buffer.byteLength(data, 'utf8') };
  }

  /** SIGKILL the process's group; resolves once the driver reports it gone. */
  async kill(principal: string, id: string): Promise<ProcessInfo> {
    const entry = this.get(principal, id);
    if (entry.info.running) {
      entry.session.control({ type: 'proc_kill', proc: id });
      await within(entry.exited.promise, ANSWER_MS, undefined);
    }
    return { ...entry.info };
  }

  list(principal: string): ProcessInfo[] {
    return [...this.entries.values()]
      .filter((entry) => entry.principal === principal)
      .map((entry) => ({ ...entry.info }));
  }

  /** The session of `id`, for the caller to count the call as the session's activity. */
  sessionOf(principal: string, id: string): Session {
    return this.get(principal, id).session;
  }

  /**
   * The session is gone, and its sandbox with every process in it. Where the sandbox shares the
   * server's pid namespace (subprocess, landlock) nothing else ends their process groups: they are
   * SIGKILLed here (a group with a live member keeps its id, so no other group can have it).
   */
  sessionEnded(session: Session, sharesPids: boolean): void {
    for (const [id, entry] of this.entries) {
      if (entry.session !== session) continue;
      if (entry.info.running && sharesPids && entry.info.pid !== null) {
        try {
          process.kill(-entry.info.pid, 'SIGKILL');
        } catch {
          // ESRCH: the group is gone already
        }
      }
      if (entry.info.running) this.finish(entry, null, 'SIGKILL');
      entry.started.resolve('the session ended');
      this.entries.delete(id);
      this.ended.set(id, `${entry.principal}\0its session ${session.id} ended (${session.endDetail})`);
      if (this.ended.size > TOMBSTONES) this.ended.delete(this.ended.keys().next().value as string);
    }
  }

  private finish(entry: Entry, exitCode: number | null, signal: string | null): void {
    if (!entry.info.running) return;
    entry.output.finish();
    Object.assign(entry.info, {
      running: false,
      exit_code: exitCode,
      signal,
      output_bytes: entry.output.end,
    });
    entry.exited.resolve();
    // Its port's forwarder, left in its process group, goes too (where the driver still knows it).
    if (entry.socket && entry.session.alive)
      entry.session.control({ type: 'proc_kill', proc: entry.info.process_id });
    const { process_id, session_id, exit_code, signal: ended_by, output_bytes } = entry.info;
    this.record(session_id, {
      type: 'process_end',
      process_id,
      session_id,
      exit_code,
      signal: ended_by,
      output_bytes,
      at: isoTime(),
    });
  }

  /** Keep at most `keep` ended processes of a session (their output), dropping the oldest. */
  private forgetExited(mine: Entry[], keep: number): void {
    const exited = mine.filter((entry) => !entry.info.running);
    for (const entry of exited.slice(0, Math.max(0, exited.length - keep + 1))) {
      this.entries.delete(entry.info.process_id);
      this.ended.set(entry.info.process_id, `${entry.principal}\0it exited and was forgotten`);
    }
  }

  private get(principal: string, id: string): Entry {
    const entry = this.entries.get(id);
    if (entry && entry.principal === principal) return entry;
    const [owner, why] = (this.ended.get(id) ?? '').split('\0');
    throw new ProcessNotFoundError(
      owner === principal && why
        ? `process ${id} is gone: ${why}`
        : `no process ${id}; list_processes shows yours, start_process starts one`,
    );
  }

  private assertSize(what: string, text: string): void {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.config.maxCodeBytes)
      throw new InvalidInputError(
        `${what} is ${bytes} bytes; the limit is ${this.config.maxCodeBytes} (CODEXEC_MAX_CODE_BYTES)`,
      );
  }
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** `promise`, or `fallback` after `ms` (the timer never holds the server open). */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
