// What sandbox mode landlock allows a run, as a confine script (script.ts): the Landlock ruleset
// for the kernel's ABI, then (for a cold run's launcher) no_new_privs, the seccomp filter, the drop
// to the sandbox user and the exec of the program with its environment.
//
// Per ABI (what each adds to what a run is denied; codexec asks for all the kernel has):
//   1  the filesystem: execute, read and write files, list directories, make and remove entries
//   2  REFER: moving or linking a file into another directory (denied everywhere but the
//      writable paths: at ABI 1, everywhere)
//   3  TRUNCATE: truncating a file (as writing it)
//   4  TCP bind and connect (all of them when the network is off; seccomp already refuses every
//      socket but AF_UNIX then). With the egress allowlist every bind, and every connect but one
//      to the proxy's port (a net-port rule: on any address, Landlock has no address rules);
//      below ABI 4 an allowlist run is refused (nothing could keep its TCP from going anywhere).
//      Not covered (no right for it up to ABI 7): listen() on an unbound TCP socket, which binds
//      an ephemeral port on every address without a bind()
//   5  IOCTL_DEV: ioctl on device files opened in the sandbox (but its /dev/null and kin)
//   6  scopes: no signal to a process outside the run's domain (the server, other runs), no
//      connection to an abstract Unix socket outside it unless the network is the host's
//   7  logging flags (nothing more to deny)
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxUnavailableError } from '../../errors/index.js';
import type { Rlimit } from '../host/index.js';
import { TERMINAL_FDS } from '../types.js';
import { type Data, Script } from './script.js';

// x86-64 system call numbers.
const NR = {
  close: 3,
  ioctl: 16,
  dup3: 292,
  execve: 59,
  chdir: 80,
  setresuid: 117,
  setresgid: 119,
  setgroups: 116,
  prctl: 157,
  openat: 257,
  seccomp: 317,
  prlimit64: 302,
  landlockCreateRuleset: 444,
  landlockAddRule: 445,
  landlockRestrictSelf: 446,
} as const;
const AT_FDCWD = -100;
const O_PATH = 0o10000000;
const O_RDWR = 2;
const O_NOCTTY = 0o400;
const TIOCSPTLCK = 0x40045431;
const TIOCGPTPEER = 0x5441;
const O_CLOEXEC = 0o2000000;
const PR_SET_NO_NEW_PRIVS = 38;
const PR_SET_PDEATHSIG = 1;
const PR_CAPBSET_DROP = 24;
const SIGKILL = 9;
const SECCOMP_SET_MODE_FILTER = 1;
const LANDLOCK_RULE_PATH_BENEATH = 1;
const LANDLOCK_RULE_NET_PORT = 2;
/** RLIMIT_* by prlimit's names for them. */
const RLIMIT: Readonly<Record<string, number>> = {
  cpu: 0,
  fsize: 1,
  data: 2,
  core: 4,
  nproc: 6,
  nofile: 7,
  as: 9,
};

/** Filesystem rights (LANDLOCK_ACCESS_FS_*). */
const FS = {
  execute: 1n << 0n,
  writeFile: 1n << 1n,
  readFile: 1n << 2n,
  readDir: 1n << 3n,
  refer: 1n << 13n,
  truncate: 1n << 14n,
  ioctlDev: 1n << 15n,
} as const;
/** Every filesystem right of ABI 1: bits 0 (EXECUTE) to 12 (MAKE_SYM). */
const FS_ABI1 = (1n << 13n) - 1n;
const NET_BIND_TCP = 1n << 0n;
const NET_CONNECT_TCP = 1n << 1n;
const SCOPE_ABSTRACT_UNIX_SOCKET = 1n << 0n;
const SCOPE_SIGNAL = 1n << 1n;

/** Rights that apply to a file (not a directory): a rule on a file may name only these. */
const FILE_RIGHTS = FS.execute | FS.writeFile | FS.readFile | FS.truncate | FS.ioctlDev;

/** The filesystem rights ABI `abi` handles: all of them are denied but where a rule allows. */
export function handledFs(abi: number): bigint {
  let rights = FS_ABI1;
  if (abi >= 2) rights |= FS.refer;
  if (abi >= 3) rights |= FS.truncate;
  if (abi >= 5) rights |= FS.ioctlDev;
  return rights;
}

/** What a run may do where, beyond what Landlock denies. */
export interface Access {
  /** Read and execute (directories, files): the system, the interpreter, the run's readable paths. */
  readonly executable: readonly string[];
  /** Read only: /etc's entries, /proc. */
  readonly readable: readonly string[];
  /** Everything: the workspace, the run's own temporary directory. */
  readonly writable: readonly string[];
  /** Read and write files (never directories): /dev/null and kin. */
  readonly devices: readonly string[];
  readonly network: 'none' | 'host' | 'allowlist';
  /**
   * With network `allowlist`: the one TCP port code may connect to, the egress proxy's on the
   * host's loopback (SandboxSpec.egress.port). On any address: a Landlock rule names a port only.
   */
  readonly egressPort?: number;
}

/** Why Landlock at ABI `abi` cannot confine a run's network as asked (a sentence), or undefined. */
export function networkRefusal(
  abi: number,
  network: Access['network'],
  egressPort: number | undefined,
): string | undefined {
  if (network !== 'allowlist') return undefined;
  if (abi < 4)
    return (
      `the network allowlist needs Landlock's TCP rules: this kernel's Landlock ABI ${abi} has none ` +
      '(it needs ABI 4, Linux 6.7), so nothing would keep code from connecting anywhere'
    );
  if (egressPort === undefined || !Number.isInteger(egressPort) || egressPort < 1 || egressPort > 65535)
    return `the network allowlist needs the egress proxy's TCP port (1-65535), not ${egressPort}`;
  return undefined;
}

/**
 * Create the run's ruleset, add a rule per path, and restrict the calling process to it (the
 * caller has set no_new_privs). Paths that do not exist (or vanish meanwhile) get no rule: what
 * they would have allowed stays denied.
 */
export function addLandlock(script: Script, abi: number, access: Access): void {
  // The backend refuses such a run before it makes anything; this keeps any other caller from
  // building a script that would leave TCP unconfined.
  const refused = networkRefusal(abi, access.network, access.egressPort);
  if (refused) throw new SandboxUnavailableError(`landlock sandbox unavailable: ${refused}`);
  const fs = handledFs(abi);
  const attr = Buffer.alloc(24);
  attr.writeBigUInt64LE(fs, 0);
  if (abi >= 4 && access.network !== 'host') attr.writeBigUInt64LE(NET_BIND_TCP | NET_CONNECT_TCP, 8);
  if (abi >= 6)
    attr.writeBigUInt64LE(SCOPE_SIGNAL | (access.network !== 'host' ? SCOPE_ABSTRACT_UNIX_SOCKET : 0n), 16);
  const size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
  const ruleset = script.slot();
  script.call(NR.landlockCreateRuleset, [{ at: script.data(attr.subarray(0, size)) }, size, 0], {
    store: ruleset,
  });
  const read = FS.readFile | FS.readDir;
  const groups: [readonly string[], bigint][] = [
    [access.executable, read | FS.execute],
    [access.readable, read],
    [access.writable, fs],
    [access.devices, FS.readFile | FS.writeFile | FS.truncate | FS.ioctlDev],
  ];
  const listable = new Set<string>();
  for (const [paths, rights] of groups)
    for (const path of paths) {
      const directory = isDirectory(path);
      if (directory === undefined) continue;
      const allowed = (directory ? rights : rights & FILE_RIGHTS) & fs;
      if (allowed !== 0n) addRule(script, ruleset, path, allowed);
      // A file the run may execute (its script, a driver, the figure backend) is found by listing
      // its directory (Python's import system does), as in the namespace sandbox, which binds it
      // in a directory of its own: names only, no file beneath is readable by this.
      if (!directory && rights & FS.execute) listable.add(dirname(path));
    }
  for (const dir of listable) addRule(script, ruleset, dir, FS.readDir);
  if (access.network === 'allowlist') addPortRule(script, ruleset, NET_CONNECT_TCP, access.egressPort ?? 0);
  script.call(NR.landlockRestrictSelf, [{ load: ruleset }, 0]);
  script.call(NR.close, [{ load: ruleset }]);
}

function addRule(script: Script, ruleset: Data, path: string, allowed: bigint): void {
  // struct landlock_path_beneath_attr (packed): u64 allowed_access, s32 parent_fd; the fd is
  // stored as a u64 into the 4 bytes after it too (room to spare: data is 8-byte aligned).
  const attr = Buffer.alloc(16);
  attr.writeBigUInt64LE(allowed, 0);
  const rule = script.data(attr);
  const fd: Data = { offset: rule.offset + 8 };
  script.call(NR.openat, [AT_FDCWD, { at: script.string(path) }, O_PATH | O_CLOEXEC], {
    store: fd,
    mayFail: true,
  });
  script.call(NR.landlockAddRule, [{ load: ruleset }, LANDLOCK_RULE_PATH_BENEATH, { at: rule }, 0], {
    mayFail: true,
  });
  script.call(NR.close, [{ load: fd }], { mayFail: true });
}

/** Allow `allowed` (bind or connect) to TCP `port`, on any address; it must take (no mayFail). */
function addPortRule(script: Script, ruleset: Data, allowed: bigint, port: number): void {
  // struct landlock_net_port_attr (packed): u64 allowed_access, u64 port.
  const attr = Buffer.alloc(16);
  attr.writeBigUInt64LE(allowed, 0);
  attr.writeBigUInt64LE(BigInt(port), 8);
  script.call(NR.landlockAddRule, [{ load: ruleset }, LANDLOCK_RULE_NET_PORT, { at: script.data(attr) }, 0]);
}

/** undefined: gone (no rule). */
function isDirectory(path: string): boolean | undefined {
  try {
    return statSync(path).isDirectory();
  } catch {
    return undefined;
  }
}

export interface Launch {
  readonly abi: number;
  readonly access: Access;
  /** The seccomp filter (struct sock_filter[]). */
  readonly seccomp: Buffer;
  /** A root server's runs drop to this uid and gid, with no groups. */
  readonly identity?: { readonly uid: number; readonly gid: number };
  /** Set here, not by a launcher (prlimit names and values, as host/rlimits.ts gives them). */
  readonly rlimits: readonly Rlimit[];
  /** Started by the server itself (no launcher, no cgroup): it dies with the server. */
  readonly dieWithParent?: boolean;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Hand the program a pseudo-terminal on TERMINAL_FDS (SandboxSpec.terminal). */
  readonly terminal?: boolean;
}

/**
 * A pseudo-terminal opened before the rules, which grant no /dev/ptmx (the host's /dev/pts holds
 * other terminals): the master on TERMINAL_FDS.master, its slave on TERMINAL_FDS.slave, got from
 * the master (TIOCGPTPEER) and never by a path. Opened before the drop and the seccomp filter, the
 * two are the program's whole reach into /dev/pts.
 */
function addTerminal(script: Script): void {
  const master = script.slot();
  const slave = script.slot();
  script.call(NR.openat, [AT_FDCWD, { at: script.string('/dev/ptmx') }, O_RDWR | O_NOCTTY], {
    store: master,
  });
  script.call(NR.ioctl, [{ load: master }, TIOCSPTLCK, { at: script.data(4) }]); // unlock: *arg = 0
  script.call(NR.ioctl, [{ load: master }, TIOCGPTPEER, O_RDWR | O_NOCTTY], { store: slave });
  script.call(NR.dup3, [{ load: master }, TERMINAL_FDS.master, 0]);
  script.call(NR.dup3, [{ load: slave }, TERMINAL_FDS.slave, 0]);
  script.call(NR.close, [{ load: master }]);
  script.call(NR.close, [{ load: slave }]);
}

/** The whole script of a cold run's launcher: it ends in the program. */
export function launchScript(launch: Launch): Buffer {
  const script = new Script();
  script.call(NR.prctl, [PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0]);
  if (launch.terminal) addTerminal(script);
  addLandlock(script, launch.abi, launch.access);
  // struct sock_fprog: u16 len, then (aligned) the filter's address.
  const fprog = Buffer.alloc(16);
  fprog.writeUInt16LE(launch.seccomp.length / 8, 0);
  const program = script.data(fprog);
  script.set(program, { at: script.data(launch.seccomp) }, 8);
  script.call(NR.seccomp, [SECCOMP_SET_MODE_FILTER, 0, { at: program }]);
  if (launch.identity) {
    const { uid, gid } = launch.identity;
    // The bounding set, while CAP_SETPCAP lasts: no exec regains a capability (EINVAL past the last).
    for (let cap = 0; cap < 64; cap++)
      script.call(NR.prctl, [PR_CAPBSET_DROP, cap, 0, 0, 0], { mayFail: true });
    script.call(NR.setgroups, [0, 0]);
    script.call(NR.setresgid, [gid, gid, gid]);
    script.call(NR.setresuid, [uid, uid, uid]);
  }
  for (const limit of launch.rlimits) {
    const resource = RLIMIT[limit.prlimit];
    if (resource === undefined) throw new RangeError(`no rlimit ${limit.prlimit}`);
    const values = Buffer.alloc(16);
    values.writeBigUInt64LE(BigInt(limit.value), 0);
    values.writeBigUInt64LE(BigInt(limit.value), 8);
    script.call(NR.prlimit64, [0, resource, { at: script.data(values) }, 0]);
  }
  // As the sandbox user, after the rules: the same checks as any later open.
  script.call(NR.chdir, [{ at: script.string(launch.cwd) }]);
  // After the drop, which would clear it.
  if (launch.dieWithParent) script.call(NR.prctl, [PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0]);
  const [program0] = launch.argv;
  if (program0 === undefined) throw new TypeError('no program to run');
  const argv = pointers(script, launch.argv);
  const env = pointers(
    script,
    Object.entries(launch.env).map(([name, value]) => `${name}=${value}`),
  );
  // If it fails, the launcher runs its own arguments (the same program) and reports why (127).
  script.call(NR.execve, [{ at: script.string(program0) }, { at: argv }, { at: env }], { mayFail: true });
  return script.encode();
}

/** A NULL-terminated array of pointers to these strings (argv, envp). */
function pointers(script: Script, strings: readonly string[]): Data {
  const array = script.data((strings.length + 1) * 8);
  strings.forEach((text, i) => {
    script.set(array, { at: script.string(text) }, i * 8);
  });
  return array;
}

/** The Landlock part alone, for a process that confines itself (a zygote's fork, drivers/zygote.py). */
export function landlockScript(abi: number, access: Access): Buffer {
  const script = new Script();
  addLandlock(script, abi, access);
  return script.encode();
}

/** The script that reports the kernel's Landlock ABI as the launcher's exit status (0: none). */
export function abiScript(): Buffer {
  const LANDLOCK_CREATE_RULESET_VERSION = 1;
  const exitGroup = 231;
  const script = new Script();
  const abi = script.slot();
  script.call(NR.landlockCreateRuleset, [0, 0, LANDLOCK_CREATE_RULESET_VERSION], {
    store: abi,
    mayFail: true,
  });
  script.call(exitGroup, [{ load: abi }]);
  return script.encode();
}
