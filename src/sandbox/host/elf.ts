// A static x86-64 executable around hand-assembled code (the drop program, the confine launcher):
// no loader, no libc, a few hundred bytes. The code is loaded read-and-execute at BASE right after
// the headers (its entry point); `bss` bytes of zeroed read-write memory, if asked for, at BSS.

/** Where the code's file is mapped. */
export const BASE = 0x400000;
/** Where the zeroed read-write memory starts (far enough above any code of ours). */
export const BSS = 0x600000;

const ELF_HEADER = 64;
const PROGRAM_HEADER = 56;
const PT_LOAD = 1;
const PT_GNU_STACK = 0x6474e551;
const R = 4;
const W = 2;
const X = 1;

/** The executable: `code` starts at BASE + headers(bss): its rip-relative data must follow it. */
export function staticExecutable(code: Buffer, bss = 0): Buffer {
  const segments = bss > 0 ? 3 : 2;
  const headers = ELF_HEADER + segments * PROGRAM_HEADER;
  const size = headers + code.length;
  const elf = Buffer.alloc(size);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(elf); // 64-bit, little-endian, System V
  elf.writeUInt16LE(2, 16); // an executable
  elf.writeUInt16LE(0x3e, 18); // x86-64
  elf.writeUInt32LE(1, 20);
  elf.writeBigUInt64LE(BigInt(BASE + headers), 24); // the entry point: the code's start
  elf.writeBigUInt64LE(BigInt(ELF_HEADER), 32); // the program headers follow this header
  elf.writeUInt16LE(ELF_HEADER, 52);
  elf.writeUInt16LE(PROGRAM_HEADER, 54);
  elf.writeUInt16LE(segments, 56);
  let at = ELF_HEADER;
  const segment = (type: number, flags: number, address: number, inFile: number, inMemory: number) => {
    elf.writeUInt32LE(type, at);
    elf.writeUInt32LE(flags, at + 4);
    elf.writeBigUInt64LE(BigInt(address), at + 16);
    elf.writeBigUInt64LE(BigInt(address), at + 24);
    elf.writeBigUInt64LE(BigInt(inFile), at + 32);
    elf.writeBigUInt64LE(BigInt(inMemory), at + 40);
    elf.writeBigUInt64LE(BigInt(type === PT_LOAD ? 0x1000 : 16), at + 48);
    at += PROGRAM_HEADER;
  };
  segment(PT_LOAD, R | X, BASE, size, size); // the whole file, at BASE
  if (bss > 0) segment(PT_LOAD, R | W, BSS, 0, bss); // nothing of the file: zeroed pages
  segment(PT_GNU_STACK, R | W, 0, 0, 0); // no executable stack
  code.copy(elf, headers);
  return elf;
}
