// The confine launcher: what sandbox mode landlock runs in front of every program, as a static
// x86-64 executable of ~0.9 KB (elf.ts). `codexec-confine PROGRAM [ARG]...` reads a script on
// SCRIPT_FD (4: where a namespace run's launcher hands bwrap its seccomp filter), closes it, makes
// the system calls it lists in order, and execs PROGRAM with its own environment if the script has
// not exec'd a program itself. The server builds the script (rules.ts): the Landlock ruleset and
// its rules, no_new_privs, the seccomp filter, the drop to the sandbox user, the exec with the
// run's environment (on a pipe, never in an argv that `ps` shows). The launcher knows none of
// them, so it stays this small, and every rule is TypeScript, tested there. A Python driver forked
// by a zygote runs the same script's Landlock part through ctypes (drivers/zygote.py).
//
// The script: u64 count, then `count` records of nine u64 (nr, flags, six arguments, store), then
// data. flags holds two bits per argument (bits 2i and 2i+1): 0 the value itself, 1 the buffer's
// address plus the value (a pointer into the data), 2 the u64 in the buffer at that offset (what
// an earlier call stored there: a file descriptor); bit 12 lets the call fail. A call's result is
// stored in the buffer at offset `store` unless that is ~0. nr STORE (1000) is no system call: it
// writes its second argument at the address its first names (a pointer inside a struct). A call
// that fails (without bit 12) writes "step N failed with errno E" to stderr and exits 126; a
// failed exec of PROGRAM, "errno E" and 127; a malformed script, the usage and 126. The script is
// the server's, never a caller's: its offsets are not checked against the buffer.
import { staticExecutable } from '../host/index.js';

/** Where the launcher reads its script. */
export const SCRIPT_FD = 4;
/** The script's room (the buffer at BSS); the six resolved arguments follow it. */
export const SCRIPT_BYTES = 65536;
/** The most records the launcher takes (900 * 72 + 8 < SCRIPT_BYTES). */
export const MAX_RECORDS = 900;
/** The launcher's pseudo call: store argument 1 at the address argument 0 names. */
export const STORE = 1000;

// Assembled from this listing (GNU as, Intel syntax); BSS is 0x600000.
// biome-ignore format: one instruction per line
const CODE = [
  '4889e3', // mov rbx, rsp (the stack at entry: argc, argv..., NULL, envp...)
  '48833b02', // cmp qword [rbx], 2 (a program to run)
  '0f82a6010000', // jb usage
  '41bc00006000', // mov r12d, BSS (the script's buffer)
  '4c89e6', // mov rsi, r12
  'ba00000100', // mov edx, SCRIPT_BYTES (room left)
  // read:
  '31c0', // xor eax, eax
  'bf04000000', // mov edi, 4 (SCRIPT_FD)
  '0f05', // syscall (read)
  '4885c0', // test rax, rax
  '0f8886010000', // js usage
  '740d', // je decoded
  '4801c6', // add rsi, rax
  '4829c2', // sub rdx, rax
  '75e4', // jne read
  'e977010000', // jmp usage (longer than the buffer)
  // decoded:
  'b803000000', // mov eax, 3 (close SCRIPT_FD: the program never sees it)
  'bf04000000', // mov edi, 0x4
  '0f05', // syscall
  '4889f1', // mov rcx, rsi
  '4c29e1', // sub rcx, r12
  '4883f908', // cmp rcx, 0x8
  '0f825b010000', // jb usage
  '4d8b3424', // mov r14, qword [r12]
  '4981fe84030000', // cmp r14, MAX_RECORDS (r14: records left)
  '0f874a010000', // ja usage
  '496bc648', // imul rax, r14, 0x48
  '4883c008', // add rax, 0x8
  '4839c8', // cmp rax, rcx
  '0f8739010000', // ja usage (fewer bytes than its records)
  '4d8d6c2408', // lea r13, [r12+8] (r13: the record)
  '498dac2400000100', // lea rbp, [r12+SCRIPT_BYTES] (rbp: its six arguments, resolved)
  '4531ff', // xor r15d, r15d (r15: the step, for messages)
  // step:
  '4d85f6', // test r14, r14
  '0f848d000000', // je run
  '4d8b4d08', // mov r9, [r13+8] (flags)
  '31c9', // xor ecx, ecx
  // resolve:
  '498b44cd10', // mov rax, qword [r13+rcx*8+0x10]
  '4489ca', // mov edx, r9d
  '83e203', // and edx, 0x3
  '740b', // je resolve+0x18
  '4c01e0', // add rax, r12 (mode 1: a pointer into the buffer)
  '83fa01', // cmp edx, 0x1
  '7403', // je resolve+0x18
  '488b00', // mov rax, [rax] (mode 2: the value stored there)
  '488944cd00', // mov qword [rbp+rcx*8+0x0], rax
  '49c1e902', // shr r9, 0x2
  'ffc1', // inc ecx
  '83f906', // cmp ecx, 0x6
  '72d8', // jb resolve
  '498b4500', // mov rax, qword [r13+0x0]
  '483de8030000', // cmp rax, STORE (1000)
  '7446', // je store
  '488b7d00', // mov rdi, qword [rbp+0x0]
  '488b7508', // mov rsi, qword [rbp+0x8]
  '488b5510', // mov rdx, qword [rbp+0x10]
  '4c8b5518', // mov r10, qword [rbp+0x18]
  '4c8b4520', // mov r8, qword [rbp+0x20]
  '4c8b4d28', // mov r9, qword [rbp+0x28]
  '0f05', // syscall
  '483d01f0ffff', // cmp rax, -4095 (an error: -1 to -4095)
  '7207', // jb done
  '41f6450910', // test byte [r13+9], 0x10 (flags bit 12: it may fail)
  '7466', // je fail
  // done:
  '498b5540', // mov rdx, [r13+64] (store)
  '4883faff', // cmp rdx, -1 (none)
  '7404', // je next
  '49890414', // mov qword [r12+rdx*1], rax
  // next:
  '4983c548', // add r13, 0x48
  '41ffc7', // inc r15d
  '49ffce', // dec r14
  'e977ffffff', // jmp step
  // store:
  '488b7d00', // mov rdi, qword [rbp+0x0]
  '488b7508', // mov rsi, qword [rbp+0x8]
  '488937', // mov qword [rdi], rsi
  'ebe4', // jmp next
  // run:
  '488b03', // mov rax, qword [rbx]
  '488d54c310', // lea rdx, [rbx+rax*8+16] (envp)
  '488d7310', // lea rsi, [rbx+16] (argv + 1)
  '488b3e', // mov rdi, qword [rsi]
  'b83b000000', // mov eax, 59 (execve: PROGRAM, when the script did not exec)
  '0f05', // syscall
  '48f7d8', // neg rax
  '4989c6', // mov r14, rax
  '488d353b010000', // lea rsi, [rip+EXEC_TEXT]
  'ba2a000000', // mov edx, 0x2a
  'e8a7000000', // call write_err
  '4c89f0', // mov rax, r14
  'e87b000000', // call write_num
  'bf7f000000', // mov edi, 127
  'eb3d', // jmp exit
  // fail:
  '48f7d8', // neg rax
  '4989c6', // mov r14, rax
  '488d35d5000000', // lea rsi, [rip+STEP_TEXT]
  'ba2d000000', // mov edx, 0x2d
  'e881000000', // call write_err
  '4489f8', // mov eax, r15d
  'e855000000', // call write_num
  '488d35e9000000', // lea rsi, [rip+ERRNO_TEXT]
  'ba13000000', // mov edx, 0x13
  'e868000000', // call write_err
  '4c89f0', // mov rax, r14
  'e83c000000', // call write_num
  'bf7e000000', // mov edi, 126
  // exit: a newline, then exit_group(edi)
  '57', // push rdi
  '488d3507010000', // lea rsi, [rip+NEWLINE]
  'ba01000000', // mov edx, 0x1
  'e849000000', // call write_err
  '5f', // pop rdi
  'b8e7000000', // mov eax, 0xe7
  '0f05', // syscall
  // usage:
  '488d3547000000', // lea rsi, [rip+USAGE_TEXT]
  'ba3d000000', // mov edx, 61
  'e830000000', // call write_err
  'bf7e000000', // mov edi, 126
  'b8e7000000', // mov eax, 0xe7
  '0f05', // syscall
  // write_num: rax in decimal to stderr, built below the stack
  '488d7424f8', // lea rsi, [rsp-0x8]
  'b90a000000', // mov ecx, 0xa
  '48ffce', // dec rsi
  '31d2', // xor edx, edx
  '48f7f1', // div rcx
  '80c230', // add dl, 0x30
  '8816', // mov byte [rsi], dl
  '4885c0', // test rax, rax
  '75ee', // jne write_num+0xa
  '488d5424f8', // lea rdx, [rsp-0x8]
  '4829f2', // sub rdx, rsi
  // write_err: rsi, rdx bytes to stderr
  'b801000000', // mov eax, 0x1
  'bf02000000', // mov edi, 0x2
  '0f05', // syscall
  'c3', // ret
].join('');
// Right after the code, at the offsets its lea instructions name.
const USAGE_TEXT = 'usage: codexec-confine PROGRAM [ARG]... (its script on fd 4)\n';
const STEP_TEXT = 'codexec: could not confine the program: step ';
const ERRNO_TEXT = ' failed with errno ';
const EXEC_TEXT = 'codexec: could not run the program: errno ';
const NEWLINE = '\n';

/** The launcher for `arch` (process.arch), or undefined where there is none (no landlock mode). */
export function confineProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== 'x64') return undefined;
  const texts = [USAGE_TEXT, STEP_TEXT, ERRNO_TEXT, EXEC_TEXT, NEWLINE].map((text) => Buffer.from(text));
  return staticExecutable(Buffer.concat([Buffer.from(CODE, 'hex'), ...texts]), SCRIPT_BYTES + 48);
}
