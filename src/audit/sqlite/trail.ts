import { closeSync, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditAttempt } from '../../policy/index.js';
import { log } from '../../util/index.js';
import { chainLine } from '../chain.js';
import { loadOrCreateKey } from '../key.js';
import type { AuditLog, AuditRow } from '../store.js';
import { auditFileName, fileDay, LOCK_FILE, listAuditFiles } from './files.js';
import { AnchorKeeper } from './keeper.js';
import { HeldLock } from './lock.js';
import { recentFromFiles } from './recent.js';
import { pruneAuditFiles } from './retention.js';
import { lastEntry, lastEntryOf } from './tail.js';
import { type VerifyReport, verifyAudit } from './verify.js';

export interface AuditTrailOptions {
  /** The log directory; audit files live beside the execution logs. */
  readonly dir: string;
  /** The audit key (`$CODEXEC_HOME/audit.key`, outside the log directory), made on first use. */
  readonly keyFile: string;
  /** Audit files older than this many days are removed (the chain stays verifiable). */
  readonly retentionDays: number;
  readonly now?: () => Date;
}

/** Where the last entry ended: a file, its size then, and that entry's hash. */
interface Tip {
  readonly file: string;
  readonly size: number;
  readonly hash: string;
}

/**
 * The audit trail: one hash-chained, HMAC-signed JSONL entry per attempt to run code, refused
 * ones too. Appends are serialized in this process and, through a lock file, across the processes
 * that share the directory; each is one write(2) with O_APPEND, made before the attempt's result
 * is returned. A file starts from the previous file's last hash, so the chain runs across days;
 * the anchor (keeper.ts) follows each day's count and last hash.
 */
export class AuditTrail implements AuditLog {
  private queue: Promise<void> = Promise.resolve();
  private tip: Tip | undefined;
  private prunedDay = '';
  private dirReady = false;
  private key: { readonly key: Buffer; readonly created: boolean } | undefined;
  private anchor: AnchorKeeper | undefined;
  private lock: HeldLock | undefined;

  constructor(private readonly options: AuditTrailOptions) {}

  record(attempt: AuditAttempt): Promise<void> {
    const run = this.queue.then(() => this.append(attempt));
    this.queue = run.catch((error: Error) => {
      this.dirReady = false; // the directory may have gone: make it again on the next entry
      log('error', `audit: ${error.message}`);
    });
    return run;
  }

  /** Resolves when every entry recorded so far is on disk (or has failed, and said so). */
  flush(): Promise<void> {
    return this.queue;
  }

  /** Flush, then let the lock go now: the anchor is written (it would be after 20 ms idle, or at exit). */
  async close(): Promise<void> {
    await this.queue;
    this.lock?.release();
  }

  async verify(): Promise<VerifyReport> {
    return verifyAudit(this.options.dir, this.options.keyFile);
  }

  async recent(principal: string | undefined, max: number): Promise<AuditRow[]> {
    return recentFromFiles(this.options.dir, principal, max);
  }

  private async append(attempt: AuditAttempt): Promise<void> {
    const { dir } = this.options;
    const at = this.options.now?.() ?? new Date();
    const file = auditFileName(at);
    if (!this.dirReady) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.dirReady = true;
    }
    this.key ??= loadOrCreateKey(this.options.keyFile);
    this.anchor ??= new AnchorKeeper(dir, this.key.key, this.key.created);
    const { anchor } = this;
    const { key } = this.key;
    this.lock ??= new HeldLock(join(dir, LOCK_FILE), {
      onAcquire: () => anchor.load(),
      onRelease: () => anchor.flush(),
    });
    await this.lock.run(() => {
      this.pruneOnNewDay(file, at, anchor);
      const fd = openSync(join(dir, file), 'a+', 0o600);
      try {
        const size = fstatSync(fd).size;
        const prev = this.prevHash(file, fd, size, anchor);
        const { line, hash } = chainLine(attempt, prev.hash, at, key);
        const bytes = Buffer.from(prev.torn ? `\n${line}` : line, 'utf8');
        const written = writeSync(fd, bytes);
        if (written !== bytes.length) throw new Error(`short write to ${file}; its last line is torn`);
        this.tip = { file, size: size + written, hash };
        anchor.appended(fileDay(file), fd, size, written, hash);
      } finally {
        closeSync(fd);
      }
    });
  }

  /**
   * The hash to chain to: the cached tip when nothing was appended since (the usual case), else
   * the last whole entry of this file or, for a new file, of the newest earlier one.
   */
  private prevHash(
    file: string,
    fd: number,
    size: number,
    anchor: AnchorKeeper,
  ): { hash: string; torn: boolean } {
    if (this.tip?.file === file && this.tip.size === size) return { hash: this.tip.hash, torn: false };
    if (size > 0) {
      const last = lastEntry(fd, size);
      if (last) return last;
    }
    const earlier = listAuditFiles(this.options.dir).filter((name) => name < file);
    for (const name of earlier.reverse()) {
      const last = lastEntryOf(this.options.dir, name);
      if (last) return { hash: last.hash, torn: size > 0 && last.torn };
    }
    return { hash: anchor.startHash, torn: size > 0 };
  }

  private pruneOnNewDay(file: string, at: Date, anchor: AnchorKeeper): void {
    if (this.prunedDay === file) return;
    this.prunedDay = file;
    pruneAuditFiles(this.options.dir, this.options.retentionDays, at.getTime(), anchor);
  }
}
