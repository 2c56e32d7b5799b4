import { StringDecoder } from 'node:string_decoder';
import type { StreamRedactor } from '../policy/index.js';

export interface OutputLimits {
  readonly maxChars: number;
  readonly head: number;
  readonly tail: number;
}

export interface CollectedOutput {
  readonly text: string;
  readonly truncated: boolean;
  readonly totalChars: number;
}

/**
 * Where a stream's whole output goes once it outgrows the cap (outputs/SavedStream): given every
 * piece, masked, in order, from the first character on — and nothing while the output fits.
 */
export interface OutputSink {
  write(text: string): void;
  /** The line under the truncation mark that says how to read on from byte `offset`. */
  pageHint(offset: number): string;
}

/**
 * Takes out the end mark a warm driver writes on a stream after the program's last output, so the
 * run can end as soon as both marks are in rather than when every copy of the pipes has closed.
 * A tail that may be the start of a mark split across chunks is held back until the next chunk.
 */
export class EndMarkFilter {
  private held = Buffer.alloc(0);
  /** The mark has gone by: everything written before it has been passed on. */
  seen = false;

  constructor(private readonly mark: Buffer) {}

  /** The bytes of `chunk` that are surely output. */
  push(chunk: Buffer): Buffer {
    if (this.seen) return chunk;
    const data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const at = data.indexOf(this.mark);
    if (at !== -1) {
      this.seen = true;
      this.held = Buffer.alloc(0);
      return Buffer.concat([data.subarray(0, at), data.subarray(at + this.mark.length)]);
    }
    // Hold back only a tail that could start the mark (output streamed live is not delayed more).
    let keep = Math.min(data.length, this.mark.length - 1);
    while (keep > 0 && !data.subarray(data.length - keep).equals(this.mark.subarray(0, keep))) keep--;
    this.held = Buffer.from(data.subarray(data.length - keep));
    return data.subarray(0, data.length - keep);
  }

  /** What was held back, at the stream's end. */
  end(): Buffer {
    const rest = this.held;
    this.held = Buffer.alloc(0);
    return rest;
  }
}

/**
 * Collects one stream with bounded memory: the first `maxChars` characters and a rolling tail,
 * never the whole stream. If the total stays within `maxChars` the text is returned whole;
 * otherwise head + `[... truncated N characters ...]` + tail, as the seed specifies.
 *
 * With a redactor (the secrets filter) every decoded piece passes it before anything keeps or
 * streams it: the one point both one-shot runs and session sends see their output go by. It works
 * on whole characters (after the decoder), so a character split across chunks is no concern.
 */
export class OutputCollector {
  private readonly decoder = new StringDecoder('utf8');
  private head = '';
  private tail = '';
  private total = 0;
  private sink: OutputSink | undefined;
  /** The sink has had everything so far (the output outgrew the cap). */
  private spilled = false;

  constructor(
    private readonly limits: OutputLimits,
    private readonly redactor?: StreamRedactor,
  ) {}

  /**
   * Keep the whole stream in `sink` should it outgrow the cap. Only while nothing is lost yet (a
   * session's output between sends may have outgrown it already: then nothing is kept).
   */
  saveTo(sink: OutputSink): void {
    if (this.total <= this.limits.maxChars) this.sink = sink;
  }

  /** Add a chunk; returns the decoded (and masked) text so callers can stream it on. */
  push(chunk: Buffer): string {
    const decoded = this.decoder.write(chunk);
    const text = this.redactor && decoded ? this.redactor.write(decoded) : decoded;
    this.add(text);
    return text;
  }

  /**
   * The stream ended (or a send's output is complete): add and return what the decoder and the
   * redactor still held, for callers to stream on before they finish().
   */
  flush(): string {
    const decoded = this.decoder.end();
    const text = this.redactor ? this.redactor.write(decoded) + this.redactor.end() : decoded;
    this.add(text);
    return text;
  }

  finish(): CollectedOutput {
    this.flush();
    const { maxChars, head, tail } = this.limits;
    if (this.total <= maxChars) return { text: this.head, truncated: false, totalChars: this.total };
    const kept = toLineEnd(this.head.slice(0, head));
    const end = fromLineStart(tail > 0 ? this.tail.slice(-tail) : '');
    const omitted = this.total - kept.length - end.length;
    // The seed's mark, unchanged (clients look for it), on a line of its own; under it, where the
    // rest is kept and from which byte to read it (the result's output_saved says it too).
    const hint = this.sink ? `${this.sink.pageHint(Buffer.byteLength(kept))}\n` : '';
    const before = kept === '' || kept.endsWith('\n') ? kept : `${kept}\n`;
    return {
      text: `${before}[... truncated ${omitted} characters ...]\n${hint}${end}`,
      truncated: true,
      totalChars: this.total,
    };
  }

  private add(text: string): void {
    if (text.length === 0) return;
    // While the output fits, `head` is all of it: the sink gets it, and the rest, once it does not.
    if (this.spilled) this.sink?.write(text);
    else if (this.sink && this.total + text.length > this.limits.maxChars) {
      this.spilled = true;
      this.sink.write(this.head + text);
    }
    this.total += text.length;
    const room = this.limits.maxChars - this.head.length;
    if (room > 0) this.head += text.length <= room ? text : text.slice(0, room);
    const keep = this.limits.tail;
    if (keep === 0) return;
    this.tail += text.length > keep ? text.slice(-keep) : text;
    if (this.tail.length > keep * 2) this.tail = this.tail.slice(-keep);
  }
}

/** The head cut after its last line end, unless that would drop more than half of it. */
function toLineEnd(text: string): string {
  const at = text.lastIndexOf('\n');
  return at >= text.length / 2 ? text.slice(0, at + 1) : text;
}

/** The tail from its first line start, unless that would drop more than half of it. */
function fromLineStart(text: string): string {
  const at = text.indexOf('\n');
  return at !== -1 && at < text.length / 2 ? text.slice(at + 1) : text;
}
