// A confine script (confine.ts): system calls in order, with the data they point to, as the
// launcher and drivers/zygote.py read it. Built by the server, never by a caller.
import { MAX_RECORDS, SCRIPT_BYTES, STORE } from './confine.js';

/** A call's argument: a number, a pointer to data (`at`), or a value a call stored there (`load`). */
export type Arg = number | bigint | { readonly at: Data } | { readonly load: Data };

/** Bytes of a script's data, placed after the records when the script is encoded. */
export interface Data {
  readonly offset: number;
}

const RECORD_U64 = 9;
const HEADER_BYTES = 8;
const RECORD_BYTES = RECORD_U64 * 8;
const MAY_FAIL = 1n << 12n;
const NO_STORE = (1n << 64n) - 1n;

interface Call {
  readonly nr: number;
  readonly args: readonly Arg[];
  readonly store?: Data;
  readonly mayFail: boolean;
}

export class Script {
  private readonly calls: Call[] = [];
  private readonly chunks: Buffer[] = [];
  private dataBytes = 0;

  /** `bytes` in the data (u64-aligned), or room for `bytes` zeroes. */
  data(bytes: Buffer | number): Data {
    const content = typeof bytes === 'number' ? Buffer.alloc(bytes) : bytes;
    const padded = Buffer.alloc(Math.ceil(content.length / 8) * 8);
    content.copy(padded);
    const data = { offset: this.dataBytes };
    this.chunks.push(padded);
    this.dataBytes += padded.length;
    return data;
  }

  /** A NUL-terminated string in the data. */
  string(text: string): Data {
    return this.data(Buffer.from(`${text}\0`));
  }

  /** A u64 slot for a result. */
  slot(): Data {
    return this.data(8);
  }

  /** System call `nr`; its result stored in `store` if given; `mayFail`: its error is not fatal. */
  call(nr: number, args: readonly Arg[], options: { store?: Data; mayFail?: boolean } = {}): this {
    if (args.length > 6) throw new RangeError('a system call takes at most six arguments');
    this.calls.push({
      nr,
      args,
      ...(options.store && { store: options.store }),
      mayFail: options.mayFail ?? false,
    });
    return this;
  }

  /** Write `value` (a pointer or a stored value) into the data at `to`, `bytes` into it. */
  set(to: Data, value: Arg, bytes = 0): this {
    return this.call(STORE, [{ at: { offset: to.offset + bytes } }, value]);
  }

  /** The script as the launcher reads it. */
  encode(): Buffer {
    if (this.calls.length > MAX_RECORDS)
      throw new RangeError(`a confine script has at most ${MAX_RECORDS} calls`);
    const start = HEADER_BYTES + this.calls.length * RECORD_BYTES;
    if (start + this.dataBytes > SCRIPT_BYTES)
      throw new RangeError(`a confine script has at most ${SCRIPT_BYTES} bytes`);
    const head = Buffer.alloc(start);
    head.writeBigUInt64LE(BigInt(this.calls.length), 0);
    this.calls.forEach((call, i) => {
      const at = HEADER_BYTES + i * RECORD_BYTES;
      let flags = call.mayFail ? MAY_FAIL : 0n;
      head.writeBigUInt64LE(BigInt(call.nr), at);
      call.args.forEach((value, j) => {
        let raw: bigint;
        if (typeof value === 'object') {
          const isPointer = 'at' in value;
          flags |= BigInt(isPointer ? 1 : 2) << BigInt(2 * j);
          raw = BigInt(start + (isPointer ? value.at : value.load).offset);
        } else raw = BigInt.asUintN(64, BigInt(value));
        head.writeBigUInt64LE(raw, at + 16 + j * 8);
      });
      head.writeBigUInt64LE(flags, at + 8);
      head.writeBigUInt64LE(call.store ? BigInt(start + call.store.offset) : NO_STORE, at + 64);
    });
    return Buffer.concat([head, ...this.chunks]);
  }
}
