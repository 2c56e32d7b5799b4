// The few entries of a --from-host image that exist nowhere on the host (/etc/passwd, /tmp 1777,
// /workspace …), written as ustar records. They go before GNU tar's stream of host files, so the
// import reads one archive and no staging directory needs owning by root or by uid 65534.

export interface TarEntry {
  /** Path inside the image, without the leading slash; under 100 bytes. */
  readonly name: string;
  readonly type: 'dir' | 'file';
  readonly mode: number;
  readonly uid?: number;
  readonly gid?: number;
  readonly content?: string;
}

const BLOCK = 512;

/** The records of `entries`, without the end-of-archive blocks (the host files follow). */
export function tarEntries(entries: readonly TarEntry[]): Buffer {
  return Buffer.concat(entries.flatMap(record));
}

function record(entry: TarEntry): Buffer[] {
  const data = Buffer.from(entry.type === 'file' ? (entry.content ?? '') : '');
  const name = entry.type === 'dir' ? `${entry.name}/` : entry.name;
  if (Buffer.byteLength(name) >= 100) throw new RangeError(`tar entry name too long: ${name}`);
  const header = Buffer.alloc(BLOCK);
  header.write(name, 0, 100, 'utf8');
  octal(header, 100, 8, entry.mode);
  octal(header, 108, 8, entry.uid ?? 0);
  octal(header, 116, 8, entry.gid ?? 0);
  octal(header, 124, 12, data.length);
  octal(header, 136, 12, Math.floor(Date.now() / 1000));
  header.write(entry.type === 'dir' ? '5' : '0', 156, 1, 'latin1');
  header.write('ustar\u000000', 257, 8, 'latin1');
  // The checksum is summed with its own field read as eight spaces.
  header.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'latin1');
  const padding = Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK);
  return [header, data, padding];
}

/** A zero-padded octal number ending in NUL, as every numeric ustar field is. */
function octal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(`${value.toString(8).padStart(width - 1, '0')}\u0000`, offset, width, 'latin1');
}
