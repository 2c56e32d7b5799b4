import { randomUUID } from 'node:crypto';
import { EndMarkFilter } from '../engine/index.js';

/** How long after `done` relayed output may take to bring the marks (a closed fd never does). */
const MARK_WAIT_MS = 2000;

type Stream = 'stdout' | 'stderr';

/**
 * The marks of one send: `done` may be read before the output written ahead of it (it comes on
 * another channel, which a background process's frames keep busy; relayed output — a container
 * engine's CLI, a pty session's relay — lags further). The driver writes `\n<mark>\n` on stdout
 * and stderr after the cell (on stdout alone when `merged`: a terminal carries both); once they
 * went by, every byte of the send has been read.
 */
export class SendMarks {
  readonly mark = `[codexec-end ${randomUUID()}]`;
  private readonly filters: Record<Stream, EndMarkFilter>;
  private seen: () => void = () => {};
  private readonly bothSeen = new Promise<void>((resolve) => {
    this.seen = resolve;
  });

  constructor(private readonly merged = false) {
    const bytes = Buffer.from(`\n${this.mark}\n`);
    this.filters = { stdout: new EndMarkFilter(bytes), stderr: new EndMarkFilter(bytes) };
  }

  /** The output in `chunk`, without the mark. */
  push(stream: Stream, chunk: Buffer): Buffer {
    if (this.merged && stream === 'stderr') return chunk; // the relay's own complaints
    const data = this.filters[stream].push(chunk);
    if (this.filters.stdout.seen && (this.merged || this.filters.stderr.seen)) this.seen();
    return data;
  }

  /**
   * What is held back as a possible mark's start while the cell waits for input: output, as no
   * mark comes before the cell ends (the filters go on looking for it).
   */
  release(): Array<[Stream, Buffer]> {
    return [
      ['stdout', this.filters.stdout.end()],
      ['stderr', this.filters.stderr.end()],
    ];
  }

  /**
   * Wait until both marks went by (or the process is gone, or a while passed: code may have closed
   * its stdout). Returns what was held back as a possible mark's start: output after all.
   */
  async settle(exited: Promise<unknown>): Promise<Array<[Stream, Buffer]>> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise((resolve) => {
      timer = setTimeout(resolve, MARK_WAIT_MS);
    });
    await Promise.race([this.bothSeen, exited, waited]);
    clearTimeout(timer);
    return this.release();
  }
}
