import { closeSync, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditAttempt, AuditSink } from '../policy/index.js';
import { log } from '../util/index.js';
import { chainLine, GENESIS } from './chain.js';
import { auditFileName, LOCK_FILE, listAuditFiles } from './files.js';
import { HeldLock } from './lock.js';
import { pruneAuditFiles, readAnchorHash } from './retention.js';
import { lastEntry } from './tail.js';

export interface AuditTrailOptions {
  /** The log directory; audit files live beside the execution logs. */
  readonly dir: string;
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
 * The audit trail: one hash-chained JSONL entry per attempt to run code, refused ones too.
 * Appends are serialized in this process and, through a lock file, across the processes that
 * share the directory; each is one write(2) with O_APPEND, made before the attempt's result is
 * returned. A file starts from the previous file's last hash, so the chain runs across days.
 */
export class AuditTrail implements AuditSink {
  private queue: Promise<void> = Promise.resolve();
  private tip: Tip | undefined;
  private prunedDay = '';
  private dirReady = false;
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

  private async append(attempt: AuditAttempt): Promise<void> {
    const { dir } = this.options;
    const at = this.options.now?.() ?? new Date();
    const file = auditFileName(at);
    if (!this.dirReady) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.dirReady = true;
    }
    this.lock ??= new HeldLock(join(dir, LOCK_FILE));
    await this.lock.run(() => {
      this.pruneOnNewDay(file, at);
      const fd = openSync(join(dir, file), 'a+', 0o600);
      try {
        const size = fstatSync(fd).size;
        const prev = this.prevHash(file, fd, size);
        const { line, hash } = chainLine(attempt, prev.hash, at);
        const bytes = Buffer.from(prev.torn ? `\n${line}` : line, 'utf8');
        const written = writeSync(fd, bytes);
        if (written !== bytes.length) throw new Error(`short write to ${file}; its last line is torn`);
        this.tip = { file, size: size + written, hash };
      } finally {
        closeSync(fd);
      }
    });
  }

  /**
   * The hash to chain to: the cached tip when nothing was appended since (the usual case), else
   * the last whole entry of this file or, for a new file, of the newest earlier one.
   */
  private prevHash(file: string, fd: number, size: number): { hash: string; torn: boolean } {
    if (this.tip?.file === file && this.tip.size === size) return { hash: this.tip.hash, torn: false };
    if (size > 0) {
      const last = lastEntry(fd, size);
      if (last) return last;
    }
    const earlier = listAuditFiles(this.options.dir).filter((name) => name < file);
    for (const name of earlier.reverse()) {
      const fdEarlier = openSync(join(this.options.dir, name), 'r');
      try {
        const last = lastEntry(fdEarlier, fstatSync(fdEarlier).size);
        if (last) return { hash: last.hash, torn: size > 0 && last.torn };
      } finally {
        closeSync(fdEarlier);
      }
    }
    return { hash: readAnchorHash(this.options.dir) ?? GENESIS, torn: size > 0 };
  }

  private pruneOnNewDay(file: string, at: Date): void {
    if (this.prunedDay === file) return;
    this.prunedDay = file;
    pruneAuditFiles(this.options.dir, this.options.retentionDays, at.getTime());
  }
}
