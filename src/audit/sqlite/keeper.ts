import { statSync } from 'node:fs';
import { join } from 'node:path';
import { log } from '../../util/index.js';
import { GENESIS } from '../chain.js';
import { type Anchor, anchorSigned, readAnchorFile, writeAnchor } from './anchor.js';
import { ANCHOR_FILE, dayFile, fileDay, KEY_FILE, listAuditFiles } from './files.js';
import { countEntries, lastEntryOf } from './tail.js';

/**
 * The anchor as the process holding the audit lock keeps it: read when the lock is taken (unless
 * the file is still the one this process last wrote), moved on in memory by each entry, and
 * written when the lock is let go (20 ms idle, 100 ms held, or exit): once per burst of entries,
 * not on the path of each. Other writers wait for the lock, so only verify can see the anchor lag
 * its files, by the entries of one burst (or of a crashed writer's last one), and it accepts
 * valid entries past the anchor. An anchor that fails its check is never overwritten: a writer
 * must not launder what verify is to report.
 */
export class AnchorKeeper {
  private anchor: Anchor | undefined;
  private dirty = false;
  /** The anchor file as this process last read or wrote it (inode, size, times), and its body. */
  private seen: string | undefined;
  private body: string | undefined;
  private refusal: string | undefined;

  /** `keyIsNew`: this process made the key, so a trail without an anchor may be an older one's. */
  constructor(
    private readonly dir: string,
    private readonly key: Buffer,
    private readonly keyIsNew: boolean,
  ) {}

  /** The `prev_hash` of a chain with no earlier entry: where the anchor says it starts. */
  get startHash(): string {
    return this.anchor?.start_hash ?? GENESIS;
  }

  /** On taking the lock: pick up what other processes wrote. Never throws (it says why on stderr). */
  load(): void {
    try {
      const stamp = this.stamp();
      if (stamp !== undefined && stamp === this.seen) return;
      this.anchor = undefined;
      this.body = undefined;
      this.dirty = false;
      this.seen = stamp;
      const file = readAnchorFile(this.dir);
      if (file.kind === 'signed' && !anchorSigned(file, this.key)) {
        this.refuse(`${ANCHOR_FILE}'s HMAC does not match (edited, or signed with another key)`);
        return;
      }
      // Without a signed anchor, audit files are an older version's (unsigned) only if this process
      // made the key: else the anchor, and perhaps signed entries, were removed.
      const hasFiles = listAuditFiles(this.dir).length > 0;
      if (file.kind !== 'signed' && hasFiles && (!this.keyIsNew || this.trailIsSigned())) {
        const state = file.kind === 'none' ? 'missing' : 'unsigned';
        this.refuse(`${ANCHOR_FILE} is ${state} though the trail was signed (${KEY_FILE} exists)`);
        return;
      }
      this.refusal = undefined;
      this.anchor =
        file.kind === 'none' ? { start_hash: GENESIS, removed_through: null, days: {} } : file.anchor;
      if (file.kind === 'signed') this.body = file.body;
      // A new or unsigned anchor is written at once, before the first signed entry relies on it.
      if (file.kind !== 'signed') this.write();
    } catch (error) {
      this.refuse(`cannot use ${ANCHOR_FILE}: ${(error as Error).message}`);
    }
  }

  /**
   * After an entry was appended to the file of `day` (open as `fd`): it held `size` bytes before,
   * `written` more now, and the entry's hash is `hash`. The day's count is carried on from the
   * anchor, plus what a writer that died before writing the anchor left past it.
   */
  appended(day: string, fd: number, size: number, written: number, hash: string): void {
    if (!this.anchor) return;
    const known = this.anchor.days[day];
    let count: number;
    if (known === undefined) count = size > 0 ? countEntries(fd, 0, size) : 0;
    else if (known.bytes <= size)
      count = known.count + (known.bytes < size ? countEntries(fd, known.bytes, size) : 0);
    else {
      // Cut below what the anchor records: keep its count so that verify reports the cut.
      log('error', `audit: ${dayFile(day)} is shorter than ${ANCHOR_FILE} records; entries were removed`);
      count = known.count;
    }
    this.anchor.days[day] = { count: count + 1, last_hash: hash, bytes: size + written };
    this.dirty = true;
  }

  /**
   * Retention is about to remove the files up to `newest`, whose last entry (of them all) has
   * `lastHash`: the chain now starts there. Written at once, before any file goes, so a crash
   * in between leaves files verify skips, not days it misses. False: the anchor is not ours to
   * change (it failed its check), so nothing may be removed.
   */
  prune(newest: string, lastHash: string | undefined): boolean {
    if (!this.anchor) return false;
    if (lastHash) this.anchor.start_hash = lastHash;
    this.anchor.removed_through = newest;
    for (const day of Object.keys(this.anchor.days)) if (day <= fileDay(newest)) delete this.anchor.days[day];
    this.write();
    return true;
  }

  /** When the lock is let go. Never throws (it runs from a timer and at exit). */
  flush(): void {
    if (!this.dirty) return;
    try {
      this.write();
    } catch (error) {
      log('error', `audit: cannot write ${ANCHOR_FILE}: ${(error as Error).message}`);
    }
  }

  private write(): void {
    if (!this.anchor) return;
    const onDisk = this.body;
    this.body = undefined; // unknown until written: after a failed write, the next one is whole
    this.body = writeAnchor(this.dir, this.anchor, this.key, onDisk);
    this.dirty = false;
    this.seen = this.stamp();
  }

  private refuse(reason: string): void {
    if (reason !== this.refusal)
      log('error', `audit: ${reason}; it is left as it is (see codexec audit verify)`);
    this.refusal = reason;
    this.anchor = undefined;
  }

  private trailIsSigned(): boolean {
    for (const name of listAuditFiles(this.dir).reverse()) {
      const last = lastEntryOf(this.dir, name);
      if (last) return last.signed;
    }
    return false;
  }

  private stamp(): string | undefined {
    try {
      const stat = statSync(join(this.dir, ANCHOR_FILE), { bigint: true });
      return `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }
}
