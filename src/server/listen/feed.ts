import type { TaskRecord, Tasks } from '../../tasks/index.js';
import { log } from '../../util/index.js';

/** How often a followed task that may change in another process is read again. */
export const FEED_POLL_MS = 500;

/** Handed each read of a task: its record, or undefined once it is gone (expired). */
export type TaskReader = (record: TaskRecord | undefined) => void;

interface Followed {
  readonly taskId: string;
  readonly principal: string;
  readonly readers: Set<TaskReader>;
  /** This task's reads, one after another: its readers see its states in the order they were read. */
  reading: Promise<void>;
  /** A poll's read is under way: the next poll skips it rather than queue behind it. */
  polled: boolean;
}

/**
 * The tasks that listens follow, each read again (as its principal) whenever this process changes
 * it, and every FEED_POLL_MS while it may change elsewhere: it runs in another process, or the
 * records are shared (replicas answer and cancel each other's tasks). Readers are handed every
 * read, in order; they tell a change from a repeat themselves. Nothing runs while nothing is
 * followed.
 */
export class TaskFeed {
  private readonly followed = new Map<string, Followed>();
  private stopChanges: (() => void) | undefined;
  private poller: NodeJS.Timeout | undefined;
  /** The last read failed (the store unreachable): said once, not every poll. */
  private failing = false;

  constructor(
    private readonly tasks: Tasks,
    private readonly pollMs = FEED_POLL_MS,
  ) {}

  /**
   * Hand `reader` the task as `principal` reads it, now and after each change, until the returned
   * function is called.
   */
  follow(taskId: string, principal: string, reader: TaskReader): () => void {
    const key = `${principal}\0${taskId}`;
    const entry = this.followed.get(key) ?? {
      taskId,
      principal,
      readers: new Set<TaskReader>(),
      reading: Promise.resolve(),
      polled: false,
    };
    this.followed.set(key, entry);
    entry.readers.add(reader);
    this.stopChanges ??= this.tasks.onChange((changed) => this.changed(changed));
    this.poller ??= setInterval(() => this.poll(), this.pollMs).unref();
    void this.read(entry);
    return () => {
      entry.readers.delete(reader);
      if (entry.readers.size === 0 && this.followed.get(key) === entry) this.followed.delete(key);
      if (this.followed.size === 0) this.stop();
    };
  }

  /** Once every read begun so far has been handed out. */
  async settled(): Promise<void> {
    await Promise.all([...this.followed.values()].map((entry) => entry.reading));
  }

  /** How many tasks are followed (a bound's test reads it). */
  get size(): number {
    return this.followed.size;
  }

  private changed(taskId: string): void {
    for (const entry of this.followed.values()) if (entry.taskId === taskId) void this.read(entry);
  }

  private poll(): void {
    for (const entry of this.followed.values()) {
      if (entry.polled || (!this.tasks.shared && this.tasks.runsHere(entry.taskId))) continue;
      entry.polled = true;
      void this.read(entry).finally(() => {
        entry.polled = false;
      });
    }
  }

  private read(entry: Followed): Promise<void> {
    entry.reading = entry.reading.then(async () => {
      if (entry.readers.size === 0) return;
      let record: TaskRecord | undefined;
      try {
        record = await this.tasks.get(entry.taskId, entry.principal);
        this.failing = false;
      } catch (error) {
        if (!this.failing) log('warn', `task listens: cannot read tasks: ${(error as Error).message}`);
        this.failing = true;
        return; // read again at the next change or poll
      }
      for (const reader of [...entry.readers]) {
        try {
          reader(record);
        } catch (error) {
          // One listen's failure (its stream gone) must not stop this task's reads for the others.
          log('warn', `task listens: ${(error as Error).message}`);
        }
      }
    });
    return entry.reading;
  }

  private stop(): void {
    this.stopChanges?.();
    this.stopChanges = undefined;
    clearInterval(this.poller);
    this.poller = undefined;
  }
}
