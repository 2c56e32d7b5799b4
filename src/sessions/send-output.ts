// A session's output, one send at a time: the driver's stdout and stderr through the secrets filter
// into bounded collectors, the running send's end marks taken out, streamed to the
// send's listener as it comes, saved whole where the result truncates it, and handed over at the
// send's end.
import { closeSaved, OutputCollector } from '../engine/index.js';
import { type OutputSaved, type SavedOutputs, type SavedStream, savedBytes } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { SandboxedProcess } from '../sandbox/index.js';
import { currentPrincipal } from '../util/index.js';
import type { SendMarks } from './marks.js';
import type { SendRequest } from './types.js';

type Stream = 'stdout' | 'stderr';

export interface CollectedSend {
  stdout: string;
  stderr: string;
  truncated: boolean;
  output_saved?: OutputSaved;
}

export class SendOutput {
  private stdout: OutputCollector;
  private stderr: OutputCollector;
  /** The running send's saved streams (CODEXEC_MAX_SAVED_OUTPUT_BYTES). */
  private saving: Record<Stream, SavedStream> | undefined;
  /** The running send's listener. */
  private onOutput: SendRequest['onOutput'];
  /** The running send's end marks (between sends: none). */
  private currentMarks: SendMarks | undefined;
  private lastAt = 0;
  private lastStream: Stream = 'stdout';

  constructor(
    proc: SandboxedProcess,
    private readonly limits: ConstructorParameters<typeof OutputCollector>[0],
    private readonly secrets: SecretsFilter | undefined,
    private readonly outputs: SavedOutputs | undefined,
  ) {
    this.stdout = this.collector();
    this.stderr = this.collector();
    for (const stream of ['stdout', 'stderr'] as const) {
      proc[stream].on('data', (chunk: Buffer) => {
        this.lastAt = Date.now();
        this.lastStream = stream;
        this.emit(stream, this[stream].push(this.unmark(stream, chunk)));
      });
    }
  }

  /** When output last came (ms since the epoch; 0: never). */
  get lastOutputAt(): number {
    return this.lastAt;
  }

  /** The stream output last came on: a prompt is looked for there. */
  get latestStream(): Stream {
    return this.lastStream;
  }

  get marks(): SendMarks | undefined {
    return this.currentMarks;
  }

  set marks(marks: SendMarks | undefined) {
    this.currentMarks = marks;
  }

  /** A send runs: its output goes to `onOutput` as it comes. */
  listen(onOutput: SendRequest['onOutput']): void {
    this.onOutput = onOutput;
  }

  /** A new part of a send, `executionId`: its output is saved from here. */
  save(executionId: string): void {
    this.saving = this.outputs?.streams(currentPrincipal(), executionId);
    if (this.saving) {
      this.stdout.saveTo(this.saving.stdout);
      this.stderr.saveTo(this.saving.stderr);
    }
  }

  /** The send is over (a failed one too): nothing is saved or streamed any more. */
  end(): void {
    closeSaved(this.saving); // a send that failed before collecting its output
    this.saving = undefined;
    this.onOutput = undefined;
  }

  /** Output the marks' filters held back as a possible mark's start, to the collectors. */
  pushHeld(held: ReadonlyArray<readonly [Stream, Buffer]>): void {
    for (const [stream, rest] of held) this.emit(stream, rest.length > 0 ? this[stream].push(rest) : '');
  }

  /** The send's output so far, its collectors started anew. */
  collect(): CollectedSend {
    // What the secrets filter held back (a possible secret's start) ends with the send's output.
    this.emit('stdout', this.stdout.flush());
    this.emit('stderr', this.stderr.flush());
    const out = this.stdout.finish();
    const err = this.stderr.finish();
    this.stdout = this.collector();
    this.stderr = this.collector();
    const saved = closeSaved(this.saving);
    this.saving = undefined;
    if (saved) void this.outputs?.trim(currentPrincipal(), savedBytes(saved)); // logs its own failure
    return {
      stdout: out.text,
      stderr: err.text,
      truncated: out.truncated || err.truncated,
      ...(saved && { output_saved: saved }),
    };
  }

  /** The end of what the driver wrote on stderr (a start-up failure's reason). */
  stderrTail(): string {
    return this.stderr.finish().text.trim().slice(-2000);
  }

  private emit(stream: Stream, text: string): void {
    if (text) this.onOutput?.(stream, text);
  }

  /** The output of `chunk` without the running send's mark. */
  private unmark(stream: Stream, chunk: Buffer): Buffer {
    return this.currentMarks ? this.currentMarks.push(stream, chunk) : chunk;
  }

  private collector(): OutputCollector {
    return new OutputCollector(this.limits, this.secrets?.stream());
  }
}
