// The drop program: what `setpriv --reuid=U --regid=G --clear-groups --no-new-privs -- PROGRAM`
// does in a root server's sandbox, as a static x86-64 executable of ~1.1 KB. setpriv is
// dynamically linked: each cold run paid for the loader, libc's start-up (CPUID probing, which a
// VM traps), libcap-ng and a passwd lookup through NSS before the program started, ~2 ms here.
// bwrap has already applied seccomp and dropped every capability but CAP_SETUID, CAP_SETGID,
// CAP_DAC_READ_SEARCH and CAP_SETPCAP (but not the bounding set, and it leaves those four in the
// inheritable set). This program empties the bounding set (which needs CAP_SETPCAP) first;
// setresuid() from root to another uid clears the permitted, effective and ambient sets; then it
// empties the inheritable set (capset) and the ambient one (explicitly): every set is 0 when the
// code starts, as in a zygote's fork. no_new_privs keeps file capabilities from granting any back
// at exec; the empty sets are defence in depth.
//
// With -r it also reports the program's end, so that a one-shot run need not wait for its
// sandbox's teardown (~0.5-1.5 ms): it reads the run's end mark (32 bytes) from REPORT_FD (7),
// forks, and the program's process (signals let in, REPORT_FD closed) execs the program. This
// process, dropped too and holding SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE and SIGTERM
// (so that signals meant for the run do not end it first), waits for it, writes the mark on
// stdout and stderr after all the program wrote, the status on REPORT_FD ("N\n", 128+N after
// signal N, as bwrap reports it), and exits with it.
import { spawnSync } from 'node:child_process';
import { findOnPath, staticExecutable } from '../host/index.js';

/** Its name in the sandbox's /etc (the copy, etc.ts): `/etc/codexec-drop [-r] UID GID PROGRAM [ARG]...`. */
export const DROP_NAME = 'codexec-drop';

// Each step's failure writes the message and errno to stderr and exits 126 (127 when the program
// was not found), as setpriv does; arguments that are not a uid and gid from 1 to 999999999 and a
// program exit 126 with the usage. Assembled from this listing (GNU as, Intel syntax).
const CODE = [
  // _start: rbx = the stack at entry: argc, argv[0..argc-1], NULL, envp...
  '4889e3', // mov rbx, rsp
  '4531ff', // xor r15d, r15d (no report)
  '48833b02', // cmp qword [rbx], 2
  '0f820f030000', // jb usage (argc < 2)
  '488b7b10', // mov rdi, [rbx+16] (argv[1])
  '66813f2d72', // cmp word [rdi], 0x722d ("-r")
  '7519', // jne ids
  '807f0200', // cmp byte [rdi+2], 0
  '7513', // jne ids
  '41bf01000000', // mov r15d, 1 (report on fd 7)
  '488b03', // mov rax, [rbx] (argc)
  '48ffc8', // dec rax
  '4883c308', // add rbx, 8 (the arguments after -r, as if it had not been there)
  '488903', // mov [rbx], rax
  // ids:
  '48833b04', // cmp qword [rbx], 4
  '0f82e1020000', // jb usage (argc < 4)
  '488b7b10', // mov rdi, [rbx+16] (argv[1])
  'e8fc020000', // call parse
  '4189c4', // mov r12d, eax (uid)
  '488b7b18', // mov rdi, [rbx+24] (argv[2])
  'e8f0020000', // call parse
  '4189c5', // mov r13d, eax (gid)
  // the bounding set, emptied while CAP_SETPCAP lasts (bwrap keeps it for this): no exec regains a capability
  '4531f6', // xor r14d, r14d (capability 0)
  // bounding:
  'b89d000000', // mov eax, 157 (prctl)
  'bf18000000', // mov edi, 24 (PR_CAPBSET_DROP)
  '4489f6', // mov esi, r14d
  '31d2', // xor edx, edx
  '4531d2', // xor r10d, r10d
  '4531c0', // xor r8d, r8d
  '0f05', // syscall
  '4883f8ea', // cmp rax, -22 (EINVAL: past the last capability the kernel has)
  '7412', // je dropped
  '4885c0', // test rax, rax
  '0f8583010000', // jnz fail
  '41ffc6', // inc r14d
  '4183fe40', // cmp r14d, 64
  '72d1', // jb bounding
  // dropped:
  'b874000000', // mov eax, 116 (setgroups)
  '31ff', // xor edi, edi (no supplementary groups)
  '31f6', // xor esi, esi
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f8566010000', // jnz fail
  'b877000000', // mov eax, 119 (setresgid)
  '4489ef', // mov edi, r13d
  '4489ee', // mov esi, r13d
  '4489ea', // mov edx, r13d
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f854d010000', // jnz fail
  'b875000000', // mov eax, 117 (setresuid: last, it takes CAP_SETGID with it)
  '4489e7', // mov edi, r12d
  '4489e6', // mov esi, r12d
  '4489e2', // mov edx, r12d
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f8534010000', // jnz fail
  // the inheritable set too (the uid change cleared the permitted, effective and ambient sets)
  '48c74424e022050820', // mov qword [rsp-32], 0x20080522 (the header: _LINUX_CAPABILITY_VERSION_3, this process)
  '31c0', // xor eax, eax
  '48894424e8', // mov [rsp-24], rax (the data: effective, permitted and inheritable all 0, twice)
  '48894424f0', // mov [rsp-16], rax
  '48894424f8', // mov [rsp-8], rax
  'b87e000000', // mov eax, 126 (capset)
  '488d7c24e0', // lea rdi, [rsp-32]
  '488d7424e8', // lea rsi, [rsp-24]
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f8500010000', // jnz fail
  'b89d000000', // mov eax, 157 (prctl)
  'bf2f000000', // mov edi, 47 (PR_CAP_AMBIENT)
  'be04000000', // mov esi, 4 (PR_CAP_AMBIENT_CLEAR_ALL)
  '31d2', // xor edx, edx
  '4531d2', // xor r10d, r10d
  '4531c0', // xor r8d, r8d
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f85de000000', // jnz fail
  'b89d000000', // mov eax, 157 (prctl)
  'bf26000000', // mov edi, 38 (PR_SET_NO_NEW_PRIVS)
  'be01000000', // mov esi, 1
  '31d2', // xor edx, edx
  '4531d2', // xor r10d, r10d
  '4531c0', // xor r8d, r8d
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f85bc000000', // jnz fail
  '4585ff', // test r15d, r15d
  '0f849d000000', // jz exec
  // report: the end mark (32 bytes) from fd 7 into [rsp]
  '4881ec00010000', // sub rsp, 256
  '4531f6', // xor r14d, r14d (bytes read)
  // readmark:
  '31c0', // xor eax, eax (read)
  'bf07000000', // mov edi, 7
  '4a8d3434', // lea rsi, [rsp+r14]
  'ba20000000', // mov edx, 32
  '4429f2', // sub edx, r14d
  '0f05', // syscall
  '4885c0', // test rax, rax
  '0f888b000000', // js fail
  '0f84e8000000', // jz eof
  '4101c6', // add r14d, eax
  '4183fe20', // cmp r14d, 32
  '72d3', // jb readmark
  // hold SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGTERM here (the program lets them in)
  '48c78424c0000000075a0000', // mov qword [rsp+192], 0x5a07
  'b80e000000', // mov eax, 14 (rt_sigprocmask)
  '31ff', // xor edi, edi (SIG_BLOCK)
  '488db424c0000000', // lea rsi, [rsp+192]
  '31d2', // xor edx, edx
  '41ba08000000', // mov r10d, 8
  '0f05', // syscall
  'b839000000', // mov eax, 57 (fork)
  '0f05', // syscall
  '4885c0', // test rax, rax
  '784b', // js fail
  '0f85af000000', // jnz parent
  'b80e000000', // mov eax, 14 (the program's process: rt_sigprocmask)
  'bf01000000', // mov edi, 1 (SIG_UNBLOCK)
  '488db424c0000000', // lea rsi, [rsp+192]
  '31d2', // xor edx, edx
  '41ba08000000', // mov r10d, 8
  '0f05', // syscall
  'b803000000', // mov eax, 3 (close)
  'bf07000000', // mov edi, 7 (the report's channel: not the program's)
  '0f05', // syscall
  '4881c400010000', // add rsp, 256
  // exec:
  '488b03', // mov rax, [rbx] (argc)
  '488d7320', // lea rsi, [rbx+32] (&argv[3])
  '488b3e', // mov rdi, [rsi] (argv[3])
  '488d54c310', // lea rdx, [rbx+rax*8+16] (envp)
  'b83b000000', // mov eax, 59 (execve)
  '0f05', // syscall
  // fail: rax = -errno
  'f7d8', // neg eax
  '4189c6', // mov r14d, eax
  'b801000000', // mov eax, 1 (write)
  'bf02000000', // mov edi, 2 (stderr)
  '488d357c010000', // lea rsi, [rip+message]
  'ba40000000', // mov edx, 64 (its length)
  '0f05', // syscall
  '488d7424ff', // lea rsi, [rsp-1] (the errno's digits, below the stack pointer)
  'c6060a', // mov byte [rsi], 10 ('\n')
  '4489f0', // mov eax, r14d
  'b90a000000', // mov ecx, 10
  // digit:
  '48ffce', // dec rsi
  '31d2', // xor edx, edx
  'f7f1', // div ecx
  '80c230', // add dl, 48 ('0')
  '8816', // mov [rsi], dl
  '85c0', // test eax, eax
  '75f0', // jnz digit
  '4889e2', // mov rdx, rsp
  '4829f2', // sub rdx, rsi (digits and newline)
  'b801000000', // mov eax, 1 (write)
  'bf02000000', // mov edi, 2
  '0f05', // syscall
  '31ff', // xor edi, edi
  '4183fe02', // cmp r14d, 2 (ENOENT)
  '400f94c7', // sete dil
  '83c77e', // add edi, 126
  'b8e7000000', // mov eax, 231 (exit_group)
  '0f05', // syscall
  // eof:
  'b8fbffffff', // mov eax, -5 (EIO: the channel ended before the mark)
  'eb96', // jmp fail
  // parent:
  '4989c4', // mov r12, rax (the program's pid)
  // reap:
  'b83d000000', // mov eax, 61 (wait4)
  '4c89e7', // mov rdi, r12
  '488db424e0000000', // lea rsi, [rsp+224] (its status)
  '31d2', // xor edx, edx
  '4531d2', // xor r10d, r10d
  '0f05', // syscall
  '4883f8fc', // cmp rax, -4 (EINTR)
  '74e3', // je reap
  '4885c0', // test rax, rax
  '0f886dffffff', // js fail
  '8b8424e0000000', // mov eax, [rsp+224]
  '89c1', // mov ecx, eax
  '83e17f', // and ecx, 0x7f (the signal that killed it)
  '7409', // jz exited
  '448da980000000', // lea r13d, [rcx+128] (128+N, as bwrap reports it)
  'eb07', // jmp report
  // exited:
  'c1e808', // shr eax, 8
  '440fb6e8', // movzx r13d, al (its exit status)
  // report:
  'b801000000', // mov eax, 1 (write)
  'bf01000000', // mov edi, 1 (the mark on stdout, after the program's output)
  '4889e6', // mov rsi, rsp
  'ba20000000', // mov edx, 32
  '0f05', // syscall
  'b801000000', // mov eax, 1 (write)
  'bf02000000', // mov edi, 2 (and on stderr)
  '4889e6', // mov rsi, rsp
  'ba20000000', // mov edx, 32
  '0f05', // syscall
  '488db424a0000000', // lea rsi, [rsp+160] (the status's digits and newline, below [rsp+161])
  'c6060a', // mov byte [rsi], 10
  '4489e8', // mov eax, r13d
  'b90a000000', // mov ecx, 10
  // status:
  '48ffce', // dec rsi
  '31d2', // xor edx, edx
  'f7f1', // div ecx
  '80c230', // add dl, 48
  '8816', // mov [rsi], dl
  '85c0', // test eax, eax
  '75f0', // jnz status
  '488d9424a1000000', // lea rdx, [rsp+161]
  '4829f2', // sub rdx, rsi
  'b801000000', // mov eax, 1 (write)
  'bf07000000', // mov edi, 7 (the report)
  '0f05', // syscall
  'b8e7000000', // mov eax, 231 (exit_group, with the program's status)
  '4489ef', // mov edi, r13d
  '0f05', // syscall
  // usage:
  'b801000000', // mov eax, 1 (write)
  'bf02000000', // mov edi, 2
  '488d353a000000', // lea rsi, [rip+usage_text]
  'ba2a000000', // mov edx, 42 (its length)
  '0f05', // syscall
  'b8e7000000', // mov eax, 231 (exit_group)
  'bf7e000000', // mov edi, 126
  '0f05', // syscall
  // parse: rdi = a string of 1-9 decimal digits, not 0 (never root) -> eax; else usage
  '31c0', // xor eax, eax
  '31c9', // xor ecx, ecx
  // next:
  '0fb6140f', // movzx edx, byte [rdi+rcx]
  '85d2', // test edx, edx
  '7416', // jz parsed
  '83ea30', // sub edx, 48 ('0')
  '83fa09', // cmp edx, 9
  '77c8', // ja usage
  '6bc00a', // imul eax, eax, 10
  '01d0', // add eax, edx
  'ffc1', // inc ecx
  '83f909', // cmp ecx, 9
  '77bc', // ja usage
  'ebe2', // jmp next
  // parsed:
  '85c0', // test eax, eax
  '74b6', // jz usage
  'c3', // ret
].join('');
// Right after the code, at the offsets its lea instructions name.
const USAGE_TEXT = 'usage: drop [-r] UID GID PROGRAM [ARG]...\n';
const MESSAGE = 'codexec: could not start the program as the sandbox user: errno ';

/** The drop program for `arch` (process.arch), or undefined where there is none (setpriv then). */
export function dropProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== 'x64') return undefined;
  return staticExecutable(
    Buffer.concat([Buffer.from(CODE, 'hex'), Buffer.from(USAGE_TEXT), Buffer.from(MESSAGE)]),
  );
}

/** Whether the program can drop to these ids (1 to 999999999: parsed as up to 9 digits); else setpriv. */
export function dropsTo(identity: { readonly uid: number; readonly gid: number }): boolean {
  const fits = (id: number) => Number.isInteger(id) && id >= 1 && id <= 999_999_999;
  return fits(identity.uid) && fits(identity.gid);
}

/**
 * Whether the drop program at `path` runs here (a temporary dir mounted noexec, or a policy, may
 * forbid it): it must run `true` as `uid` and exit 0. Once per server, on the host.
 */
export function dropRuns(path: string, uid = 65534): boolean {
  const truePath = findOnPath('true') ?? '/bin/true';
  const result = spawnSync(path, [String(uid), String(uid), truePath], { stdio: 'ignore', timeout: 5000 });
  return result.status === 0;
}
