import { z } from 'zod';
import { lazily } from '../util/index.js';

// The control channel between the server and a session driver (the child's fd 3). Frames are
// `<byte length in decimal>\n<UTF-8 JSON>`: decimal so the bash driver can read them with `read`.

/** Server → driver. Key order matters: the bash driver matches `type`, `id`, `mark`, `code` in turn. */
export interface ExecMessage {
  readonly type: 'exec';
  readonly id: string;
  /** Written by the driver on stdout and stderr as `\n<mark>\n` after the cell: its output is all in. */
  readonly mark?: string;
  readonly code: string;
}

/** Server → driver: background processes (start_process and the tools after it; python driver). */
export type ProcMessage =
  | { readonly type: 'proc_start'; readonly proc: string; readonly command: string }
  | { readonly type: 'proc_stdin'; readonly proc: string; readonly data: string; readonly eof: boolean }
  | { readonly type: 'proc_kill'; readonly proc: string };

/** Driver → server, made on the first message: an idle server holds no session schema. */
const schemas = lazily(() => {
  const procId = z.string().max(64);
  /** About a background process; `data` is base64 (output is bytes). */
  const procEvent = z.discriminatedUnion('type', [
    z.object({ type: z.literal('proc_started'), proc: procId, pid: z.number().int() }),
    z.object({ type: z.literal('proc_output'), proc: procId, data: z.string() }),
    z.object({
      type: z.literal('proc_exit'),
      proc: procId,
      exit_code: z.number().int().nullable(),
      signal: z.string().max(32).nullable(),
    }),
    z.object({ type: z.literal('proc_error'), proc: procId.nullable(), message: z.string().max(4096) }),
  ]);
  const driverMessage = z.discriminatedUnion('type', [
    ...procEvent.options,
    z.object({ type: z.literal('ready'), pid: z.number().int(), version: z.string().optional() }),
    z.object({
      type: z.literal('done'),
      id: z.string(),
      status: z.enum(['ok', 'error', 'interrupted']),
      exit_code: z.number().int(),
    }),
  ]);
  return { procEvent, driverMessage };
});
type Schemas = ReturnType<typeof schemas>;
/** Driver → server about a background process. */
export type ProcEvent = z.infer<Schemas['procEvent']>;

/** Driver → server, validated at the boundary. */
export type DriverMessage = z.infer<Schemas['driverMessage']>;
export type DoneMessage = Extract<DriverMessage, { type: 'done' }>;

export function encodeFrame(message: ExecMessage | ProcMessage): Buffer {
  const body = Buffer.from(
    JSON.stringify(
      message.type === 'exec'
        ? {
            type: message.type,
            id: message.id,
            ...(message.mark && { mark: message.mark }),
            code: message.code,
          }
        : message,
    ),
    'utf8',
  );
  return Buffer.concat([Buffer.from(`${body.length}\n`, 'latin1'), body]);
}

/** Largest frame a driver may send; anything bigger means the channel is corrupt. */
const MAX_FRAME_BYTES = 1 << 20;

/** Reassembles frames from arbitrary chunks; a malformed frame is a protocol error. */
export class FrameDecoder {
  private buffer: Buffer = Buffer.alloc(0);

  /** Feed a chunk; returns every complete message it finished. Throws on a corrupt channel. */
  push(chunk: Buffer): DriverMessage[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const messages: DriverMessage[] = [];
    for (;;) {
      const newline = this.buffer.indexOf(10);
      if (newline < 0) {
        if (this.buffer.length > 20) throw new Error('control frame header is not a length');
        return messages;
      }
      const header = this.buffer.subarray(0, newline).toString('latin1');
      const size = Number(header);
      if (!/^\d+$/.test(header) || size > MAX_FRAME_BYTES)
        throw new Error(`bad control frame header "${header}"`);
      const end = newline + 1 + size;
      if (this.buffer.length < end) return messages;
      const body = this.buffer.subarray(newline + 1, end).toString('utf8');
      this.buffer = this.buffer.subarray(end);
      messages.push(schemas().driverMessage.parse(JSON.parse(body)));
    }
  }
}
