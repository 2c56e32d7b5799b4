import { StringDecoder } from 'node:string_decoder';

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
 * Collects one stream with bounded memory: the first `maxChars` characters and a rolling tail,
 * never the whole stream. If the total stays within `maxChars` the text is returned whole;
 * otherwise head + `[... truncated N characters ...]` + tail, as the seed specifies.
 */
export class OutputCollector {
  private readonly decoder = new StringDecoder('utf8');
  private head = '';
  private tail = '';
  private total = 0;

  constructor(private readonly limits: OutputLimits) {}

  /** Add a chunk; returns the decoded text so callers can stream it on. */
  push(chunk: Buffer): string {
    const text = this.decoder.write(chunk);
    this.add(text);
    return text;
  }

  finish(): CollectedOutput {
    this.add(this.decoder.end());
    const { maxChars, head, tail } = this.limits;
    if (this.total <= maxChars) return { text: this.head, truncated: false, totalChars: this.total };
    const kept = this.head.slice(0, head);
    const end = tail > 0 ? this.tail.slice(-tail) : '';
    const omitted = this.total - kept.length - end.length;
    return {
      text: `${kept}\n\n[... truncated ${omitted} characters ...]\n\n${end}`,
      truncated: true,
      totalChars: this.total,
    };
  }

  private add(text: string): void {
    if (text.length === 0) return;
    this.total += text.length;
    const room = this.limits.maxChars - this.head.length;
    if (room > 0) this.head += text.length <= room ? text : text.slice(0, room);
    const keep = this.limits.tail;
    if (keep === 0) return;
    this.tail += text.length > keep ? text.slice(-keep) : text;
    if (this.tail.length > keep * 2) this.tail = this.tail.slice(-keep);
  }
}
