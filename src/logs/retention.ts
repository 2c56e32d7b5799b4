import { randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { LOCAL_PRINCIPAL } from '../util/index.js';
import { parseLogFileName } from './files.js';
import { executedAt, parseLine, statusOf } from './lines.js';
import type { LogWriter } from './writer.js';

const DAY_MS = 86_400_000;

export interface RetentionDays {
  readonly success: number;
  readonly failure: number;
  readonly session: number;
}

/** Entries (or session files) older than these instants (ms) have expired. */
export interface Cutoffs {
  readonly success: number;
  readonly failure: number;
  readonly session: number;
}

export function cutoffs(days: RetentionDays, now: number): Cutoffs {
  return {
    success: now - days.success * DAY_MS,
    failure: now - days.failure * DAY_MS,
    session: now - days.session * DAY_MS,
  };
}

/** The seed's rule for one entry: session work 90 days, one-shot success 30, failure/timeout 90. */
export function isExpired(
  entry: { session_id: string | null; status: string; executed_ms: number },
  cut: Cutoffs,
): boolean {
  if (entry.session_id !== null) return entry.executed_ms < cut.session;
  return entry.executed_ms < (entry.status === 'success' ? cut.success : cut.failure);
}

/**
 * Whether a log file in `dir` may hold an expired entry, read from names and times alone (no
 * index): a daily file from its date, a session file from its last change, each with a day's
 * margin for work that started long before its line was written. False only when none may.
 */
export async function mayHaveExpired(dir: string, cut: Cutoffs): Promise<boolean> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return false; // no log directory: nothing logged yet
  }
  for (const name of names) {
    const file = parseLogFileName(name);
    if (file?.kind === 'daily' && (file.dayMs ?? 0) - DAY_MS < Math.max(cut.success, cut.failure))
      return true;
    if (file?.kind === 'session') {
      const changed = await stat(join(dir, name)).then(
        (info) => info.mtimeMs,
        () => Number.POSITIVE_INFINITY, // gone meanwhile
      );
      if (changed - DAY_MS < cut.session) return true;
    }
  }
  return false;
}

export interface RetentionIndex {
  /** How many indexed entries of `file` have expired (daily files are only read when some have). */
  countExpired(file: string, cut: Cutoffs): number;
  /** Re-read `file` after it was rewritten or deleted (its rows leave the index). */
  syncFile(file: string): void;
  listLogFiles(): string[];
}

export interface RetentionReport {
  removedEntries: number;
  rewrittenFiles: string[];
  deletedFiles: string[];
  /** The executions whose entries were removed, for what else goes with them (saved output). */
  expired: ExpiredExecution[];
}

export interface ExpiredExecution {
  readonly executionId: string;
  readonly principal: string;
}

/**
 * Apply retention to the log directory: drop expired entries from daily files (rewritten
 * atomically: temp file + rename, inside the writer's queue so no append of ours is lost) and
 * delete session files whose last activity has expired. Only files named like our logs are
 * touched — never saved scripts or anything else.
 */
export async function applyRetention(
  dir: string,
  writer: LogWriter,
  index: RetentionIndex,
  cut: Cutoffs,
  shouldStop: () => boolean = () => false,
): Promise<RetentionReport> {
  const report: RetentionReport = { removedEntries: 0, rewrittenFiles: [], deletedFiles: [], expired: [] };
  for (const name of index.listLogFiles()) {
    if (shouldStop()) break;
    const kind = parseLogFileName(name)?.kind;
    const path = join(dir, name);
    let prune: ((path: string, cut: Cutoffs) => Promise<FileOutcome>) | undefined;
    if (kind === 'daily' && index.countExpired(name, cut) > 0) prune = pruneDaily;
    else if (kind === 'session') prune = pruneSession;
    if (!prune) continue;
    const run = prune;
    const outcome = await writer.exclusive(() => run(path, cut), `retention of ${name}`);
    if (outcome.removed === 0 && !outcome.deleted) continue;
    report.removedEntries += outcome.removed;
    report.expired.push(...outcome.expired);
    (outcome.deleted ? report.deletedFiles : report.rewrittenFiles).push(name);
    index.syncFile(name);
  }
  return report;
}

interface FileOutcome {
  removed: number;
  deleted: boolean;
  expired: ExpiredExecution[];
}

const NOTHING: FileOutcome = { removed: 0, deleted: false, expired: [] };

function expiredOf(entry: { execution_id: string; principal?: string | null | undefined }): ExpiredExecution {
  return { executionId: entry.execution_id, principal: entry.principal ?? LOCAL_PRINCIPAL };
}

const ATTEMPTS = 5;

async function pruneDaily(path: string, cut: Cutoffs): Promise<FileOutcome> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const snapshot = await readStable(path);
    if (!snapshot) return NOTHING;
    const { kept, expired, live } = filterLines(snapshot.text, cut);
    const removed = expired.length;
    if (removed === 0) return NOTHING;
    if (!live) {
      await rm(path, { force: true });
      return { removed, deleted: true, expired };
    }
    const temp = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temp, kept, { mode: 0o600 });
    // Another process may have appended since we read: then start over rather than drop its line.
    // (A line landing between this check and the rename is the remaining, tiny window.)
    if (await unchanged(path, snapshot)) {
      await rename(temp, path);
      return { removed, deleted: false, expired };
    }
    await rm(temp, { force: true });
  }
  return NOTHING;
}

/** Keep every line that is not an expired execution (corrupt lines stay while the file lives). */
function filterLines(
  text: string,
  cut: Cutoffs,
): { kept: string; expired: ExpiredExecution[]; live: boolean } {
  const lines = text.split('\n');
  const tail = lines.pop() ?? ''; // after the last newline: '' or a line still being written
  const kept: string[] = [];
  const expired: ExpiredExecution[] = [];
  let live = tail !== '';
  for (const line of lines) {
    const parsed = parseLine(line);
    if (parsed.kind === 'execution') {
      const entry = parsed.line;
      const isOld = isExpired(
        {
          session_id: entry.session_id ?? null,
          status: statusOf(entry),
          executed_ms: Date.parse(executedAt(entry)),
        },
        cut,
      );
      if (isOld) {
        expired.push(expiredOf(entry));
        continue;
      }
    }
    if (parsed.kind !== 'corrupt') live = true;
    kept.push(`${line}\n`);
  }
  return { kept: kept.join('') + tail, expired, live };
}

const stamps = z.object({
  executed_at: z.string().optional(),
  at: z.string().optional(),
  started_at: z.string().optional(),
  ended_at: z.string().optional(),
});

/** A session file expires as a whole when its newest line is older than the session cutoff. */
async function pruneSession(path: string, cut: Cutoffs): Promise<FileOutcome> {
  const snapshot = await readStable(path);
  if (!snapshot) return NOTHING;
  let newest = Number.NEGATIVE_INFINITY;
  const expired: ExpiredExecution[] = [];
  for (const line of snapshot.text.split('\n')) {
    if (line.trim() === '') continue;
    const parsed = parseLine(line);
    if (parsed.kind === 'execution') expired.push(expiredOf(parsed.line));
    if (parsed.kind === 'corrupt') continue;
    const times = stamps.safeParse(JSON.parse(line));
    if (!times.success) continue;
    for (const value of Object.values(times.data)) {
      const ms = value === undefined ? Number.NaN : Date.parse(value);
      if (ms > newest) newest = ms;
    }
  }
  if (newest === Number.NEGATIVE_INFINITY) newest = snapshot.mtimeMs;
  if (newest >= cut.session || !(await unchanged(path, snapshot))) return NOTHING;
  await rm(path, { force: true });
  return { removed: expired.length, deleted: true, expired };
}

interface Snapshot {
  text: string;
  size: number;
  ino: number;
  mtimeMs: number;
}

async function readStable(path: string): Promise<Snapshot | undefined> {
  try {
    const before = await stat(path);
    const data = await readFile(path);
    return { text: data.toString('utf8'), size: data.length, ino: before.ino, mtimeMs: before.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function unchanged(path: string, snapshot: Snapshot): Promise<boolean> {
  const now = await stat(path).catch(() => undefined);
  return now !== undefined && now.size === snapshot.size && now.ino === snapshot.ino;
}
