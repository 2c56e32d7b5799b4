import { describe, expect, it } from 'vitest';
import {
  buildFilter,
  encodeFilter,
  type Instruction,
  RET,
  seccompArch,
} from '../../src/sandbox/host/seccomp.js';

// A classic-BPF interpreter for the few opcodes the filter uses, so the program's decisions are
// checked instruction by instruction without loading it into a kernel.
interface Call {
  nr: number;
  arch: number;
  arg0?: number;
  arg1?: number;
  /** The upper half of args[1] (a pointer's). */
  arg1Hi?: number;
  arg2?: number;
  arg3?: number;
}

function run(program: readonly Instruction[], call: Call): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch, 4);
  data.writeUInt32LE(call.arg0 ?? 0, 16);
  data.writeUInt32LE(call.arg1 ?? 0, 24);
  data.writeUInt32LE(call.arg1Hi ?? 0, 28);
  data.writeUInt32LE(call.arg2 ?? 0, 32);
  data.writeUInt32LE(call.arg3 ?? 0, 40);
  let a = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const insn = program[pc] as Instruction;
    switch (insn.code) {
      case 0x20:
        a = data.readUInt32LE(insn.k);
        break;
      case 0x15:
        pc += a === insn.k ? insn.jt : insn.jf;
        break;
      case 0x35:
        pc += a >= insn.k ? insn.jt : insn.jf;
        break;
      case 0x45:
        pc += (a & insn.k) !== 0 ? insn.jt : insn.jf;
        break;
      case 0x54:
        a = (a & insn.k) >>> 0;
        break;
      case 0x06:
        return insn.k;
      default:
        throw new Error(`unexpected opcode ${insn.code}`);
    }
  }
  throw new Error('fell off the end of the program');
}

const X64 = 0xc000003e;
const ARM64 = 0xc00000b7;
const I386 = 0x40000003;
const EPERM = RET.errno(1);

describe('seccomp filter (x86_64)', () => {
  const online = buildFilter('x64', { sockets: 'any' });
  const offline = buildFilter('x64', { sockets: 'unix' });

  it('allows ordinary syscalls', () => {
    for (const nr of [0, 1, 2, 9, 57, 59, 60, 231]) expect(run(offline, { nr, arch: X64 })).toBe(RET.allow);
  });

  it('kills foreign ABIs: i386 and x32', () => {
    expect(run(offline, { nr: 1, arch: I386 })).toBe(RET.killProcess);
    expect(run(offline, { nr: 0x40000000 + 1, arch: X64 })).toBe(RET.killProcess);
  });

  it('denies mount, ptrace, bpf, io_uring, unshare, setns, keyctl, kexec, modules', () => {
    for (const nr of [165, 166, 101, 321, 425, 426, 272, 308, 250, 246, 175, 313, 169, 298, 323, 310]) {
      expect(run(offline, { nr, arch: X64 })).toBe(EPERM);
    }
  });

  it('refuses clone with any CLONE_NEW* flag but allows threads and forks', () => {
    expect(run(offline, { nr: 56, arch: X64, arg0: 0x10000000 })).toBe(EPERM); // NEWUSER
    expect(run(offline, { nr: 56, arch: X64, arg0: 0x40000000 })).toBe(EPERM); // NEWNET
    expect(run(offline, { nr: 56, arch: X64, arg0: 0x003d0f00 })).toBe(RET.allow); // pthread_create
    expect(run(offline, { nr: 56, arch: X64, arg0: 0x01200011 })).toBe(RET.allow); // fork
    expect(run(offline, { nr: 435, arch: X64 })).toBe(RET.errno(38)); // clone3 → ENOSYS → glibc uses clone
  });

  it('offline: only AF_UNIX sockets; online: any family', () => {
    expect(run(offline, { nr: 41, arch: X64, arg0: 1 })).toBe(RET.allow);
    expect(run(offline, { nr: 41, arch: X64, arg0: 2 })).toBe(RET.errno(13));
    expect(run(offline, { nr: 41, arch: X64, arg0: 10 })).toBe(RET.errno(13));
    expect(run(offline, { nr: 41, arch: X64, arg0: 16 })).toBe(RET.errno(13)); // netlink
    expect(run(online, { nr: 41, arch: X64, arg0: 2 })).toBe(RET.allow);
  });

  it('egress allowlist: AF_UNIX and TCP over IPv4 and IPv6 only (no UDP, raw, packet, netlink or SCTP)', () => {
    const tcp = buildFilter('x64', { sockets: 'unix+tcp' });
    const socket = (arg0: number, arg1: number, arg2 = 0) =>
      run(tcp, { nr: 41, arch: X64, arg0, arg1, arg2 });
    const CLOEXEC_NONBLOCK = 0o2000000 | 0o4000;
    expect(socket(1, 1)).toBe(RET.allow); // AF_UNIX stream
    expect(socket(1, 2)).toBe(RET.allow); // AF_UNIX datagram
    expect(socket(2, 1)).toBe(RET.allow); // AF_INET stream
    expect(socket(2, 1, 6)).toBe(RET.allow); // IPPROTO_TCP named
    expect(socket(10, 1 | CLOEXEC_NONBLOCK)).toBe(RET.allow); // AF_INET6 stream, flags set
    expect(socket(2, 2)).toBe(RET.errno(13)); // UDP
    expect(socket(10, 2 | CLOEXEC_NONBLOCK)).toBe(RET.errno(13));
    expect(socket(2, 3, 1)).toBe(RET.errno(13)); // raw ICMP
    expect(socket(2, 1, 132)).toBe(RET.errno(13)); // SCTP stream
    expect(socket(2, 1, 262)).toBe(RET.errno(13)); // MPTCP
    expect(socket(16, 3)).toBe(RET.errno(13)); // netlink
    expect(socket(17, 3)).toBe(RET.errno(13)); // packet
    // The rest of the filter stays as it was.
    expect(run(tcp, { nr: 56, arch: X64, arg0: 0x40000000 })).toBe(EPERM);
    expect(run(tcp, { nr: 0, arch: X64 })).toBe(RET.allow);
  });

  it('refuses a send with MSG_FASTOPEN (a TCP connection without connect()) in every filter', () => {
    const MSG_FASTOPEN = 0x20000000;
    const MSG_NOSIGNAL_DONTWAIT = 0x4000 | 0x40;
    for (const sockets of ['unix', 'unix+tcp', 'any'] as const) {
      const filter = buildFilter('x64', { sockets });
      // sendto(fd, buf, len, flags, addr, addrlen) and sendmmsg(fd, vec, vlen, flags): flags 4th.
      for (const nr of [44, 307]) {
        expect(run(filter, { nr, arch: X64, arg3: MSG_FASTOPEN })).toBe(EPERM);
        expect(run(filter, { nr, arch: X64, arg3: MSG_FASTOPEN | MSG_NOSIGNAL_DONTWAIT })).toBe(EPERM);
        expect(run(filter, { nr, arch: X64, arg3: MSG_NOSIGNAL_DONTWAIT })).toBe(RET.allow);
        // The flag in another argument (a length, say) is no flag.
        expect(run(filter, { nr, arch: X64, arg2: MSG_FASTOPEN })).toBe(RET.allow);
      }
      // sendmsg(fd, msg, flags): flags 3rd.
      expect(run(filter, { nr: 46, arch: X64, arg2: MSG_FASTOPEN })).toBe(EPERM);
      expect(run(filter, { nr: 46, arch: X64, arg2: MSG_NOSIGNAL_DONTWAIT })).toBe(RET.allow);
      expect(run(filter, { nr: 46, arch: X64, arg3: MSG_FASTOPEN })).toBe(RET.allow);
      // recvfrom (45) and recvmsg (47) take flags there too, and are not sends.
      expect(run(filter, { nr: 45, arch: X64, arg3: MSG_FASTOPEN })).toBe(RET.allow);
      expect(run(filter, { nr: 47, arch: X64, arg2: MSG_FASTOPEN })).toBe(RET.allow);
    }
  });

  it('encodes 8 bytes per instruction with in-range jumps', () => {
    expect(encodeFilter(offline).length).toBe(offline.length * 8);
    const jumps = [...offline.entries()].filter(([, insn]) => (insn.code & 0x07) === 0x05);
    expect(jumps.length).toBeGreaterThan(40);
    for (const [pc, insn] of jumps) expect(pc + 1 + Math.max(insn.jt, insn.jf)).toBeLessThan(offline.length);
    expect(offline.at(-1)).toEqual({ code: 0x06, jt: 0, jf: 0, k: RET.allow });
  });
});

describe('seccomp filter (aarch64)', () => {
  const offline = buildFilter('arm64', { sockets: 'unix' });

  it('uses the generic syscall table and kills arm32 compat calls', () => {
    expect(run(offline, { nr: 40, arch: ARM64 })).toBe(EPERM); // mount
    expect(run(offline, { nr: 117, arch: ARM64 })).toBe(EPERM); // ptrace
    expect(run(offline, { nr: 198, arch: ARM64, arg0: 2 })).toBe(RET.errno(13)); // socket(AF_INET)
    expect(run(offline, { nr: 220, arch: ARM64, arg0: 0x10000000 })).toBe(EPERM); // clone(NEWUSER)
    expect(run(offline, { nr: 63, arch: ARM64 })).toBe(RET.allow); // read
    expect(run(offline, { nr: 206, arch: ARM64, arg3: 0x20000000 })).toBe(EPERM); // sendto(MSG_FASTOPEN)
    expect(run(offline, { nr: 211, arch: ARM64, arg2: 0x20000000 })).toBe(EPERM); // sendmsg
    expect(run(offline, { nr: 269, arch: ARM64, arg3: 0x20000000 })).toBe(EPERM); // sendmmsg
    expect(run(offline, { nr: 206, arch: ARM64 })).toBe(RET.allow);
    expect(run(offline, { nr: 63, arch: 0x40000028 })).toBe(RET.killProcess); // AUDIT_ARCH_ARM
  });
});

describe('seccomp filter: metadata changed through descriptors only', () => {
  const x64 = buildFilter('x64', { sockets: 'unix', metadataByDescriptor: true });
  const arm64 = buildFilter('arm64', { sockets: 'unix', metadataByDescriptor: true });
  const plain = buildFilter('x64', { sockets: 'unix' });

  it('refuses mode, owner, time and xattr changes by path; allows them through a descriptor', () => {
    // chmod, fchmodat, fchmodat2, chown, lchown, fchownat, utime, utimes, futimesat, setxattr,
    // lsetxattr, removexattr, lremovexattr, setxattrat, removexattrat
    for (const nr of [90, 268, 452, 92, 94, 260, 132, 235, 261, 188, 189, 197, 199, 463, 466])
      expect(run(x64, { nr, arch: X64 }), `syscall ${nr}`).toBe(EPERM);
    // fchmod, fchown, fsetxattr, fremovexattr, read
    for (const nr of [91, 93, 190, 196, 0])
      expect(run(x64, { nr, arch: X64 }), `syscall ${nr}`).toBe(RET.allow);
    // utimensat: a path (either half of the pointer) refused; none (futimens) allowed.
    expect(run(x64, { nr: 280, arch: X64, arg1: 0x1000 })).toBe(EPERM);
    expect(run(x64, { nr: 280, arch: X64, arg1Hi: 0x7fff })).toBe(EPERM);
    expect(run(x64, { nr: 280, arch: X64 })).toBe(RET.allow);
    // What follows the block still applies: a namespace clone, a socket.
    expect(run(x64, { nr: 56, arch: X64, arg0: 0x10000000 })).toBe(EPERM);
    expect(run(x64, { nr: 41, arch: X64, arg0: 2 })).toBe(RET.errno(13));
  });

  it('on aarch64 too (fchmodat, fchownat, utimensat, setxattr); not without the option', () => {
    for (const nr of [53, 452, 54, 5, 6, 14, 15]) expect(run(arm64, { nr, arch: ARM64 })).toBe(EPERM);
    expect(run(arm64, { nr: 88, arch: ARM64, arg1: 8 })).toBe(EPERM);
    expect(run(arm64, { nr: 88, arch: ARM64 })).toBe(RET.allow);
    expect(run(arm64, { nr: 52 /* fchmod */, arch: ARM64 })).toBe(RET.allow);
    for (const nr of [90, 268, 280]) expect(run(plain, { nr, arch: X64, arg1: 8 })).toBe(RET.allow);
  });
});

describe('seccomp filter: no set-id file, no host-wide IPC outside an IPC namespace', () => {
  const x64 = buildFilter('x64', { sockets: 'unix' });
  const landlock = buildFilter('x64', { sockets: 'unix', noHostIpc: true });
  const landlockArm64 = buildFilter('arm64', { sockets: 'unix', noHostIpc: true });
  const arm64 = buildFilter('arm64', { sockets: 'unix' });
  const ENOSYS = RET.errno(38);

  it('refuses a mode with the setuid or setgid bit, by every call that sets one; allows the rest', () => {
    // chmod, fchmod, fchmodat, fchmodat2, creat, mknod, mknodat: [nr, index of the mode argument]
    const calls: Array<[number, number]> = [
      [90, 1],
      [91, 1],
      [268, 2],
      [452, 2],
      [85, 1],
      [133, 1],
      [259, 2],
    ];
    const withMode = (nr: number, at: number, mode: number) => ({ nr, arch: X64, [`arg${at}`]: mode });
    for (const [nr, at] of calls) {
      expect(run(x64, withMode(nr, at, 0o4755)), `${nr} setuid`).toBe(EPERM);
      expect(run(x64, withMode(nr, at, 0o2755)), `${nr} setgid`).toBe(EPERM);
      expect(run(x64, withMode(nr, at, 0o755)), `${nr} plain`).toBe(RET.allow);
    }
    // open/openat: only a call that creates counts its mode (O_CREAT 0o100, O_TMPFILE).
    expect(run(x64, { nr: 2, arch: X64, arg1: 0o101, arg2: 0o4755 })).toBe(EPERM);
    expect(run(x64, { nr: 257, arch: X64, arg2: 0o20000002, arg3: 0o6755 })).toBe(EPERM);
    expect(run(x64, { nr: 257, arch: X64, arg2: 0o101, arg3: 0o644 })).toBe(RET.allow);
    expect(run(x64, { nr: 257, arch: X64, arg2: 0, arg3: 0o4000 })).toBe(RET.allow);
    // openat2 carries its mode in memory: refused whole, as not there (callers fall back).
    expect(run(x64, { nr: 437, arch: X64 })).toBe(ENOSYS);
    expect(run(arm64, { nr: 53, arch: ARM64, arg2: 0o4755 })).toBe(EPERM); // fchmodat
    expect(run(arm64, { nr: 56, arch: ARM64, arg2: 0o100, arg3: 0o2755 })).toBe(EPERM); // openat
    expect(run(arm64, { nr: 52, arch: ARM64, arg1: 0o755 })).toBe(RET.allow); // fchmod
  });

  it('refuses System V shared memory, semaphores and queues where asked (landlock), not otherwise', () => {
    // shmget, shmat, shmctl, shmdt, semget, semop, semctl, semtimedop, msgget, msgsnd, msgrcv, msgctl
    for (const nr of [29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71]) {
      expect(run(landlock, { nr, arch: X64 }), `${nr}`).toBe(EPERM);
      expect(run(x64, { nr, arch: X64 }), `${nr}`).toBe(RET.allow);
    }
  });

  it('refuses POSIX message queues where asked (landlock), not otherwise', () => {
    // mq_open, mq_unlink, mq_timedsend, mq_timedreceive, mq_notify, mq_getsetattr
    for (const nr of [240, 241, 242, 243, 244, 245]) {
      expect(run(landlock, { nr, arch: X64 }), `${nr}`).toBe(EPERM);
      expect(run(x64, { nr, arch: X64 }), `${nr}`).toBe(RET.allow);
    }
    for (const nr of [180, 181, 182, 183, 184, 185]) {
      expect(run(landlockArm64, { nr, arch: ARM64 }), `arm64 ${nr}`).toBe(EPERM);
      expect(run(arm64, { nr, arch: ARM64 }), `arm64 ${nr}`).toBe(RET.allow);
    }
  });
});

describe('seccompArch', () => {
  it('supports x86_64 and aarch64 and refuses the rest', () => {
    expect(seccompArch('x64')).toBe('x64');
    expect(seccompArch('arm64')).toBe('arm64');
    expect(seccompArch('ia32')).toBeUndefined();
    expect(seccompArch('riscv64')).toBeUndefined();
  });
});
