// The seccomp filter of every confined run (handed to `bwrap --seccomp FD`, or loaded by landlock
// mode's launcher and zygote forks), as classic BPF built here (no libseccomp). It denies escapes
// from the sandbox, kernel attack surface, sockets the run's network has no use for and sends that
// open TCP without connect(); it kills any process that enters through a foreign ABI (i386
// `int 0x80`, x32, arm32 compat), where syscall numbers would not match the table below.
import { arch as hostArch } from 'node:os';
import type { SandboxSpec } from '../types.js';

export type SeccompArch = 'x64' | 'arm64';

interface ArchTable {
  readonly auditArch: number;
  /** Syscall numbers at or above this belong to the x32 ABI (x86_64 only). */
  readonly x32Bit?: number;
  readonly nr: Readonly<Record<string, number>>;
}

// Numbers from the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl and the
// generic asm-generic/unistd.h that arm64 uses). Names absent on one arch are simply omitted.
// biome-ignore format: one table line per row of the kernel's tables reads better than one per entry
const ARCHES: Readonly<Record<SeccompArch, ArchTable>> = {
  x64: {
    auditArch: 0xc000003e,
    x32Bit: 0x40000000,
    nr: {
      socket: 41, sendto: 44, sendmsg: 46, sendmmsg: 307, clone: 56, setpgid: 109, setsid: 112, ptrace: 101, syslog: 103, vhangup: 153, pivot_root: 155, chroot: 161,
      acct: 163, mount: 165, umount2: 166, swapon: 167, swapoff: 168, reboot: 169, iopl: 172,
      ioperm: 173, init_module: 175, delete_module: 176, quotactl: 179, kexec_load: 246, add_key: 248,
      request_key: 249, keyctl: 250, unshare: 272, perf_event_open: 298, name_to_handle_at: 303,
      open_by_handle_at: 304, setns: 308, process_vm_readv: 310, process_vm_writev: 311,
      finit_module: 313, kexec_file_load: 320, bpf: 321, userfaultfd: 323, io_uring_setup: 425,
      io_uring_enter: 426, io_uring_register: 427, open_tree: 428, move_mount: 429, fsopen: 430,
      fsconfig: 431, fsmount: 432, fspick: 433, clone3: 435, mount_setattr: 442,
      chmod: 90, fchmodat: 268, fchmodat2: 452, chown: 92, lchown: 94, fchownat: 260, utime: 132, utimes: 235,
      futimesat: 261, utimensat: 280, setxattr: 188, lsetxattr: 189, removexattr: 197, lremovexattr: 199,
      setxattrat: 463, removexattrat: 466, fchmod: 91, open: 2, openat: 257, creat: 85, mknod: 133, mknodat: 259,
      openat2: 437, shmget: 29, shmat: 30, shmctl: 31, shmdt: 67, semget: 64, semop: 65, semctl: 66,
      semtimedop: 220, msgget: 68, msgsnd: 69, msgrcv: 70, msgctl: 71, mq_open: 240, mq_unlink: 241,
      mq_timedsend: 242, mq_timedreceive: 243, mq_notify: 244, mq_getsetattr: 245,
    },
  },
  arm64: {
    auditArch: 0xc00000b7,
    nr: {
      socket: 198, sendto: 206, sendmsg: 211, sendmmsg: 269, clone: 220, setpgid: 154, setsid: 157, ptrace: 117, syslog: 116, vhangup: 58, pivot_root: 41, chroot: 51,
      acct: 89, mount: 40, umount2: 39, swapon: 224, swapoff: 225, reboot: 142, init_module: 105,
      delete_module: 106, quotactl: 60, kexec_load: 104, add_key: 217, request_key: 218, keyctl: 219,
      unshare: 97, perf_event_open: 241, name_to_handle_at: 264, open_by_handle_at: 265, setns: 268,
      process_vm_readv: 270, process_vm_writev: 271, finit_module: 273, kexec_file_load: 294, bpf: 280,
      userfaultfd: 282, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, open_tree: 428,
      move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, clone3: 435,
      mount_setattr: 442, fchmodat: 53, fchmodat2: 452, fchownat: 54, utimensat: 88, setxattr: 5,
      lsetxattr: 6, removexattr: 14, lremovexattr: 15, setxattrat: 463, removexattrat: 466, fchmod: 52,
      openat: 56, mknodat: 33, openat2: 437, shmget: 194, shmat: 196, shmctl: 195, shmdt: 197, semget: 190,
      semop: 193, semctl: 191, semtimedop: 192, msgget: 186, msgsnd: 189, msgrcv: 188, msgctl: 187,
      mq_open: 180, mq_unlink: 181, mq_timedsend: 182, mq_timedreceive: 183, mq_notify: 184, mq_getsetattr: 185,
    },
  },
};

/** Denied with EPERM: escapes from the namespaces, kernel attack surface, host administration. */
// biome-ignore format: a list of names
export const DENIED_SYSCALLS = [
  'ptrace', 'process_vm_readv', 'process_vm_writev', 'bpf', 'perf_event_open', 'userfaultfd',
  'keyctl', 'add_key', 'request_key', 'mount', 'umount2', 'pivot_root', 'chroot', 'setns', 'unshare',
  'open_tree', 'move_mount', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr',
  'kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'reboot',
  'swapon', 'swapoff', 'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'acct', 'quotactl',
  'syslog', 'vhangup', 'iopl', 'ioperm', 'name_to_handle_at', 'open_by_handle_at',
] as const;

/**
 * Calls that change a file's mode, owner, times or extended attributes (ACLs among them) found by
 * a path: Landlock checks none of them, so where the run's uid owns files outside its writable
 * paths they are refused, and the same changes through a descriptor (fchmod, fchown, futimens,
 * fsetxattr on a file the run could open, which Landlock did check) are what is left.
 * utimensat with no path is futimens: handled apart.
 */
// biome-ignore format: a list of names
export const METADATA_BY_PATH = [
  'chmod', 'fchmodat', 'fchmodat2', 'chown', 'lchown', 'fchownat', 'utime', 'utimes', 'futimesat',
  'setxattr', 'lsetxattr', 'removexattr', 'lremovexattr', 'setxattrat', 'removexattrat',
] as const;

/**
 * Calls that set a file's mode, with the argument that carries it: a mode with the setuid or setgid
 * bit is refused in every run. A run owns files on the host while it runs (its workspace, lent): a
 * set-id copy of an interpreter there, handed to a host process, would run as the run's uid (or in
 * the runs' group) outside any sandbox, and outlive it. openat2's mode is in a struct BPF cannot
 * read: it is refused whole (ENOSYS: callers fall back to openat).
 */
// biome-ignore format: one call per entry
const MODE_ARGUMENT: ReadonlyArray<readonly [string, number]> = [
  ['chmod', 1], ['fchmod', 1], ['fchmodat', 2], ['fchmodat2', 2], ['creat', 1], ['mknod', 1], ['mknodat', 2],
];
/** open and openat: the mode counts only where the flags (argument: the first) create a file. */
// biome-ignore format: one call per entry
const CREATE_MODE_ARGUMENT: ReadonlyArray<readonly [string, number, number]> = [['open', 1, 2], ['openat', 2, 3]];
const SET_ID_BITS = 0o6000;
/** O_CREAT and __O_TMPFILE (the same on x86-64 and the generic table). */
const CREATES = 0o100 | 0o20000000;

/**
 * The IPC objects that live in the IPC namespace: System V shared memory, semaphores and message
 * queues, and POSIX message queues. Outside an IPC namespace of its own (landlock mode) what a run
 * made outlives it, host-wide, counts against the host's limits, and is seen by runs of other
 * servers. (mq_open creates a queue before the permission check that fails it.)
 */
// biome-ignore format: a list of names
export const HOST_IPC = [
  'shmget', 'shmat', 'shmctl', 'shmdt', 'semget', 'semop', 'semctl', 'semtimedop', 'msgget', 'msgsnd',
  'msgrcv', 'msgctl', 'mq_open', 'mq_unlink', 'mq_timedsend', 'mq_timedreceive', 'mq_notify', 'mq_getsetattr',
] as const;

// biome-ignore format: flag names beside their values
const CLONE_NEW_ANY =
  0x00020000 /* NEWNS */ | 0x02000000 /* NEWCGROUP */ | 0x04000000 /* NEWUTS */ | 0x08000000 /* NEWIPC */ |
  0x10000000 /* NEWUSER */ | 0x20000000 /* NEWPID */ | 0x40000000; /* NEWNET */
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const SOCK_STREAM = 1;
/** socket()'s type without SOCK_NONBLOCK and SOCK_CLOEXEC. */
const SOCK_TYPE_MASK = 0xf;
const IPPROTO_TCP = 6;
/**
 * A send that opens the TCP connection it carries data on (TCP Fast Open): the kernel connects
 * without the connect() call Landlock checks, so the run's TCP rules would not apply to it.
 */
const MSG_FASTOPEN = 0x20000000;
const EPERM = 1;
const EACCES = 13;
const ENOSYS = 38;

export const RET = {
  killProcess: 0x80000000,
  allow: 0x7fff0000,
  errno: (errno: number) => 0x00050000 | errno,
} as const;

// struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]. Both arches are little-endian,
// so the low 32 bits of args[0] sit at offset 16.
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0_LO = 16;
const OFF_ARG1_LO = 24;
const OFF_ARG1_HI = 28;
const OFF_ARG2_LO = 32;
const OFF_ARG3_LO = 40;
/** The low 32 bits of args[i]. */
const argLo = (i: number) => 16 + 8 * i;

const LD_ABS = 0x20;
const JEQ = 0x15;
const JGE = 0x35;
const JSET = 0x45;
const RET_K = 0x06;
const ALU_AND_K = 0x54;

export interface Instruction {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

const ld = (offset: number): Instruction => ({ code: LD_ABS, jt: 0, jf: 0, k: offset });
const ret = (k: number): Instruction => ({ code: RET_K, jt: 0, jf: 0, k: k >>> 0 });
const jump = (code: number, k: number, jt: number, jf: number): Instruction => ({ code, jt, jf, k: k >>> 0 });

/**
 * Which sockets code may create: `unix` (the network off without a network namespace),
 * `unix+tcp` (the egress allowlist, or the network off in a namespace of its own: AF_UNIX and TCP
 * over IPv4/IPv6 only, so no UDP, DNS, raw or packet socket; where TCP may go is the network
 * namespace's or Landlock's to say), `any` (the host's network).
 */
export type SocketPolicy = 'unix' | 'unix+tcp' | 'any';

/**
 * The sockets a run's code may create: its network's. `isolated`: the run has a network namespace
 * of its own (namespace mode) whose only interface, with the network off, is its loopback, so TCP
 * reaches nothing but the run's own servers (a dev server and the code that tests it), as Docker's
 * `--network none` allows. Without one (landlock mode) loopback is the host's and its services:
 * Unix sockets alone.
 */
export function socketPolicy(spec: Pick<SandboxSpec, 'network'>, isolated: boolean): SocketPolicy {
  if (spec.network === 'host') return 'any';
  return spec.network === 'allowlist' || isolated ? 'unix+tcp' : 'unix';
}

export interface FilterOptions {
  readonly sockets: SocketPolicy;
  /**
   * Deny setsid and setpgid: every process stays in the run's process group, which is how a run
   * with neither a pid namespace nor a cgroup (landlock mode, a non-root server) is ended whole.
   */
  readonly sessionFixed?: boolean;
  /**
   * Refuse METADATA_BY_PATH (and utimensat given a path): for runs whose uid owns files outside
   * what Landlock lets them open (landlock mode, code run as a host directory's owner).
   */
  readonly metadataByDescriptor?: boolean;
  /** Refuse HOST_IPC (a run with no IPC namespace of its own: landlock mode). */
  readonly noHostIpc?: boolean;
}

/** The filter as instructions (exported for tests, which run it through a tiny BPF interpreter). */
export function buildFilter(arch: SeccompArch, options: FilterOptions): Instruction[] {
  const table = ARCHES[arch];
  const program: Instruction[] = [
    ld(OFF_ARCH),
    jump(JEQ, table.auditArch, 1, 0),
    ret(RET.killProcess),
    ld(OFF_NR),
  ];
  if (table.x32Bit !== undefined) program.push(jump(JGE, table.x32Bit, 0, 1), ret(RET.killProcess));
  for (const name of DENIED_SYSCALLS) {
    const nr = table.nr[name];
    if (nr !== undefined) program.push(jump(JEQ, nr, 0, 1), ret(RET.errno(EPERM)));
  }
  if (options.sessionFixed)
    for (const name of ['setsid', 'setpgid'])
      program.push(jump(JEQ, nr(table, name), 0, 1), ret(RET.errno(EPERM)));
  if (options.metadataByDescriptor) program.push(...metadataByDescriptor(table));
  program.push(...noHostIpc(table, options), ...noSetId(table));
  // glibc falls back from clone3 to clone on ENOSYS; clone3 flags live in memory BPF cannot read.
  program.push(jump(JEQ, nr(table, 'clone3'), 0, 1), ret(RET.errno(ENOSYS)));
  if (options.sockets === 'unix') {
    // socket(): allow AF_UNIX, refuse every other family. Falls through to the clone check.
    program.push(
      jump(JEQ, nr(table, 'socket'), 0, 4),
      ld(OFF_ARG0_LO),
      jump(JEQ, AF_UNIX, 0, 1),
      ret(RET.allow),
      ret(RET.errno(EACCES)),
    );
  } else if (options.sockets === 'unix+tcp') {
    // socket(): AF_UNIX; AF_INET and AF_INET6 of type SOCK_STREAM with protocol 0 or TCP.
    // biome-ignore format: one instruction per line, jumps counted in the comments
    program.push(
      jump(JEQ, nr(table, 'socket'), 0, 12),
      ld(OFF_ARG0_LO),
      jump(JEQ, AF_UNIX, 9, 0), //  → allow
      jump(JEQ, AF_INET, 1, 0), //  → type
      jump(JEQ, AF_INET6, 0, 6), // → type, else deny
      ld(OFF_ARG1_LO), //            type:
      { code: ALU_AND_K, jt: 0, jf: 0, k: SOCK_TYPE_MASK },
      jump(JEQ, SOCK_STREAM, 0, 3), // else deny
      ld(OFF_ARG2_LO),
      jump(JEQ, 0, 2, 0), //        → allow
      jump(JEQ, IPPROTO_TCP, 1, 0), // → allow, else deny
      ret(RET.errno(EACCES)), //     deny:
      ret(RET.allow), //             allow:
    );
  }
  // clone(): plain threads and forks pass, any CLONE_NEW* flag is refused. Sends with
  // MSG_FASTOPEN, in every filter: no way to open TCP without connect(). The flags are sendto's
  // and sendmmsg's fourth argument and sendmsg's third (a send never reads a msghdr's msg_flags).
  program.push(
    ...refuseFlags(nr(table, 'clone'), OFF_ARG0_LO, CLONE_NEW_ANY),
    ...refuseFlags(nr(table, 'sendto'), OFF_ARG3_LO, MSG_FASTOPEN),
    ...refuseFlags(nr(table, 'sendmsg'), OFF_ARG2_LO, MSG_FASTOPEN),
    ...refuseFlags(nr(table, 'sendmmsg'), OFF_ARG3_LO, MSG_FASTOPEN),
    ret(RET.allow),
  );
  return program;
}

/** HOST_IPC refused, where asked (a run with no IPC namespace of its own). */
function noHostIpc(table: ArchTable, options: FilterOptions): Instruction[] {
  const program: Instruction[] = [];
  if (options.noHostIpc)
    for (const name of HOST_IPC) {
      const number = table.nr[name];
      if (number !== undefined) program.push(jump(JEQ, number, 0, 1), ret(RET.errno(EPERM)));
    }
  return program;
}

/** No mode with a set-id bit (MODE_ARGUMENT, CREATE_MODE_ARGUMENT); openat2 not there. */
function noSetId(table: ArchTable): Instruction[] {
  const program: Instruction[] = [];
  program.push(jump(JEQ, nr(table, 'openat2'), 0, 1), ret(RET.errno(ENOSYS)));
  for (const [name, arg] of MODE_ARGUMENT) {
    const number = table.nr[name];
    if (number !== undefined) program.push(...refuseFlags(number, argLo(arg), SET_ID_BITS));
  }
  for (const [name, flags, mode] of CREATE_MODE_ARGUMENT) {
    const number = table.nr[name];
    // biome-ignore format: one instruction per line, jumps counted in the comments
    if (number !== undefined)
      program.push(
        jump(JEQ, number, 0, 6),
        ld(argLo(flags)),
        jump(JSET, CREATES, 0, 3), //     not creating → allow
        ld(argLo(mode)),
        jump(JSET, SET_ID_BITS, 0, 1), // no set-id bit → allow
        ret(RET.errno(EPERM)),
        ret(RET.allow),
      );
  }
  return program;
}

/** METADATA_BY_PATH refused; utimensat only with a null path (futimens on a descriptor). */
function metadataByDescriptor(table: ArchTable): Instruction[] {
  const program: Instruction[] = [];
  for (const name of METADATA_BY_PATH) {
    const nr = table.nr[name];
    if (nr !== undefined) program.push(jump(JEQ, nr, 0, 1), ret(RET.errno(EPERM)));
  }
  // biome-ignore format: one instruction per line, jumps counted in the comments
  program.push(
    jump(JEQ, nr(table, 'utimensat'), 0, 6),
    ld(OFF_ARG1_LO),
    jump(JEQ, 0, 0, 2), //  low half set → deny
    ld(OFF_ARG1_HI),
    jump(JEQ, 0, 1, 0), //  both halves zero → allow
    ret(RET.errno(EPERM)), // deny:
    ret(RET.allow), //       allow:
    ld(OFF_NR), //           (not utimensat: the number again for what follows)
  );
  return program;
}

/**
 * System call `nr` with any of `flags` in the argument at `offset`: refused (EPERM); without them,
 * allowed. Any other call skips the block, the accumulator still holding its number.
 */
function refuseFlags(nr: number, offset: number, flags: number): Instruction[] {
  return [jump(JEQ, nr, 0, 4), ld(offset), jump(JSET, flags, 0, 1), ret(RET.errno(EPERM)), ret(RET.allow)];
}

function nr(table: ArchTable, name: string): number {
  const value = table.nr[name];
  if (value === undefined) throw new Error(`no syscall number for ${name}`);
  return value;
}

/** struct sock_filter[] in host byte order: what bwrap reads from the fd and hands to the kernel. */
export function encodeFilter(program: readonly Instruction[]): Buffer {
  const buffer = Buffer.alloc(program.length * 8);
  program.forEach((insn, i) => {
    buffer.writeUInt16LE(insn.code, i * 8);
    buffer.writeUInt8(insn.jt, i * 8 + 2);
    buffer.writeUInt8(insn.jf, i * 8 + 3);
    buffer.writeUInt32LE(insn.k, i * 8 + 4);
  });
  return buffer;
}

/** The host's arch if the filter supports it; undefined means "refuse to build a filter". */
export function seccompArch(arch: string = hostArch()): SeccompArch | undefined {
  return arch === 'x64' || arch === 'arm64' ? arch : undefined;
}

const cache = new Map<string, Buffer>();

/** Encoded filter for this host, built once per option set (not per run). */
export function hostFilter(options: FilterOptions): Buffer | undefined {
  const arch = seccompArch();
  if (!arch) return undefined;
  const key = `${arch}:${options.sockets}:${options.sessionFixed === true}:${options.metadataByDescriptor === true}:${options.noHostIpc === true}`;
  let encoded = cache.get(key);
  if (!encoded) {
    encoded = encodeFilter(buildFilter(arch, options));
    cache.set(key, encoded);
  }
  return encoded;
}
