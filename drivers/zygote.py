# Host-side helper of a root namespace-mode server: a forker (forker.py) that is itself the
# sandbox's Python, started once and initialised (site, the warm driver) so that a warm Python
# need not pay an interpreter start (~20 ms of CPU here) per run. It runs the interpreter the
# sandbox uses, as root, with the sandbox's environment minus anything a run or an agent controls
# (no PYTHONPATH, a HOME that does not exist), and never runs code it was sent.
#
# Each launcher it forks (forker.child) is given, instead of an argv to exec, a JSON job:
#   {"bwrap": [bwrap argv], "placeholder": [a command], "uid": U, "gid": G, "env": {...}, "cwd": "..."}
# and the seccomp program on SECCOMP_FD. The launcher becomes a waiter:
#   1. it starts bwrap, which builds the run's sandbox exactly as for a cold run and runs a
#      placeholder: its first output says the sandbox is complete, and it lives until the launcher
#      closes its stdin. On x86-64 that is PLACEHOLDER, else the job's (`cat FILE -`);
#   2. it joins the sandbox's namespaces (setns: cgroup, ipc, uts, net, pid, mnt) and forks the
#      program's process, which is pid-namespaced and inside the run's cgroup;
#   3. that process drops everything the sandbox's setpriv and bwrap would: no
#      capabilities (bounding set emptied), the sandbox uid/gid with no groups, no_new_privs, the
#      seccomp filter, the environment; then it is the warm driver (warm_python.py), waiting on fd 3;
#   4. the waiter forwards graceful signals to the run's processes, and when the program's process
#      exits, kills the sandbox and exits with its status as bwrap would (128+N for signal N).
import sys

# What `python script.py` has imported when the script starts: a program forked from here gets
# just these, as it would in a cold run; whatever the zygote imported for itself is dropped.
STARTUP_MODULES = frozenset(sys.modules)

import ctypes  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import struct  # noqa: E402

import forker  # noqa: E402
import warm_python  # noqa: E402

SECCOMP_FD = 4
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# setns(2) flags, in the order joined: the mount namespace last (it moves the root).
NAMESPACES = (
    ("cgroup", 0x02000000),
    ("ipc", 0x08000000),
    ("uts", 0x04000000),
    ("net", 0x40000000),
    ("pid", 0x20000000),
    ("mnt", 0x00020000),
)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

libc = ctypes.CDLL(None, use_errno=True)


def placeholder_program():
    """
    The placeholder as an x86-64 executable of 267 bytes: name itself, write(1, "ready\\n"), read
    stdin until it ends, exit(0); what `cat FILE -` does for a launcher, without the dynamic loader
    and libc's start-up (CPUID probing, which a VM traps): ~0.5 ms of CPU per sandbox on this
    project's host.
    """
    base = 0x400000
    headers = 64 + 2 * 56  # the ELF header, then a loadable segment and a non-executable stack
    code = bytes.fromhex(
        "b89d000000"  # mov eax, 157 (prctl)
        "bf0f000000"  # mov edi, 15 (PR_SET_NAME: what ps shows of it in the sandbox)
        "488d353e000000"  # lea rsi, [rip+62] (the name, after the message)
        "0f05"  # syscall
        "b801000000"  # mov eax, 1 (write)
        "bf01000000"  # mov edi, 1 (stdout)
        "488d3525000000"  # lea rsi, [rip+37] (the message, after the code)
        "ba06000000"  # mov edx, 6
        "0f05"  # syscall
        "31c0"  # loop: xor eax, eax (read)
        "31ff"  # xor edi, edi (stdin)
        "488d7424c0"  # lea rsi, [rsp-64] (a buffer below the stack pointer)
        "ba40000000"  # mov edx, 64
        "0f05"  # syscall
        "4885c0"  # test rax, rax
        "7feb"  # jg loop (until end of file or an error)
        "b83c000000"  # mov eax, 60 (exit)
        "31ff"  # xor edi, edi
        "0f05"  # syscall
    ) + b"ready\nplaceholder\0"
    size = headers + len(code)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, System V
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, base + headers, 64, 0, 0, 64, 56, 2, 0, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)  # PT_LOAD, r-x
    stack = struct.pack("<IIQQQQQQ", 0x6474E551, 6, 0, 0, 0, 0, 0, 16)  # PT_GNU_STACK, rw-
    return header + load + stack + code


# Above every launcher's slots (forker.child moves its own descriptors to 16 above them).
PLACEHOLDER_FD = 250


def load_placeholder():
    """The placeholder in a sealed memfd at PLACEHOLDER_FD, if it runs here; else None (cat)."""
    if os.uname().machine != "x86_64":
        return None
    try:
        memfd = os.memfd_create("codexec-placeholder", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.write(memfd, placeholder_program())
        seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
        fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, seals)
        fd = fcntl.fcntl(memfd, fcntl.F_DUPFD_CLOEXEC, PLACEHOLDER_FD)
        os.close(memfd)
        # Proven once: a host may forbid executing memfds (vm.memfd_noexec=2).
        said_r, said_w = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, fd, 3), (os.POSIX_SPAWN_DUP2, said_w, 1), (os.POSIX_SPAWN_CLOSE, 0)]
        path = "/proc/self/fd/3"
        pid = os.posix_spawn(path, [path], {}, file_actions=actions)
        os.close(said_w)
        said = os.read(said_r, 64)
        os.close(said_r)
        _, status = os.waitpid(pid, 0)
        if said == b"ready\n" and os.waitstatus_to_exitcode(status) == 0:
            return fd
        os.close(fd)
    except OSError:
        pass
    return None


PLACEHOLDER = None  # set at start-up, before the first launcher is forked


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, "%s: %s" % (what, os.strerror(error)))


def prctl(option, value):
    check(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), "prctl %d" % option)


def children_of(pid):
    found = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as listing:
            found += [int(child) for child in listing.read().split()]
    return found


def bwrap_exit(status):
    """The exit code bwrap reports for its child's wait status."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def run(rest, launcher):
    """In a launcher: build the sandbox, fork the program's process into it, wait. Never returns."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the zygote's end (the server's) ends the run
    if os.getppid() == 1:
        os._exit(1)
    job = json.loads(rest[0])
    program = forker.read_all(SECCOMP_FD)
    os.close(SECCOMP_FD)
    # The run's cgroup lists its processes by host pid, whatever namespaces this process joins.
    procs = os.open(os.path.join(launcher["cgroup"][0], "cgroup.procs"), os.O_RDONLY)
    life_r, life_w = os.pipe()  # the placeholder runs until this ends
    said_r, said_w = os.pipe()  # its first output: the sandbox is complete
    # posix_spawn (vfork underneath), not fork: a fork of this interpreter copies its page tables.
    # bwrap gets the placeholder's pipes as stdin and stdout, and the run's stderr for its errors;
    # every other descriptor of ours is close-on-exec but the run's own slots above stderr.
    actions = [(os.POSIX_SPAWN_DUP2, life_r, 0), (os.POSIX_SPAWN_DUP2, said_w, 1)]
    actions += [(os.POSIX_SPAWN_CLOSE, slot) for slot in range(3, len(launcher["slots"]))]
    command = job["placeholder"]
    if PLACEHOLDER is not None:
        # bwrap passes the descriptor down; the sandbox's /proc reaches the memfd through it.
        slot = len(launcher["slots"])
        actions.append((os.POSIX_SPAWN_DUP2, PLACEHOLDER, slot))
        command = ["/proc/self/fd/%d" % slot]
    bwrap = os.posix_spawn(job["bwrap"][0], job["bwrap"] + command, {}, file_actions=actions)
    os.close(life_r)
    os.close(said_w)
    if not os.read(said_r, 64):  # bwrap failed (and said why on stderr)
        _, status = os.waitpid(bwrap, 0)
        os._exit(bwrap_exit(status) or 1)
    os.close(said_r)
    (leader,) = children_of(bwrap)
    infrastructure = {os.getpid(), bwrap, leader, *children_of(leader)}
    for name, flag in NAMESPACES:
        path = "/proc/%d/ns/%s" % (leader, name)
        if os.stat(path).st_ino == os.stat("/proc/self/ns/%s" % name).st_ino:
            continue  # not unshared (the network, when it is allowed)
        fd = os.open(path, os.O_RDONLY)
        try:
            check(libc.setns(fd, flag), "setns %s" % name)
        finally:
            os.close(fd)

    def forward(signum, _frame):
        os.lseek(procs, 0, os.SEEK_SET)
        for member in map(int, forker.read_all(procs).split()):
            if member not in infrastructure:
                try:
                    os.kill(member, signum)
                except OSError:
                    pass

    # Set up before the fork, with the signals held until after it: the program's process resets
    # them before it lets any in, and what this process touches after the fork costs copies of
    # pages the two share.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    for signum in FORWARDED:
        signal.signal(signum, forward)
    pid = os.fork()
    if pid == 0:
        try:
            become_program(job, program)
        except BaseException as error:
            os.write(2, ("codexec zygote: %r\n" % (error,)).encode())
        os._exit(127)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    for fd in range(0, 4):
        os.close(fd)  # the program's process holds the run's stdio alone: its end is theirs
    _, status = os.waitpid(pid, 0)
    # Whatever the program left behind dies with the sandbox's pid namespace, as after a cold run.
    os.kill(bwrap, signal.SIGKILL)
    os.waitpid(bwrap, 0)
    os._exit(bwrap_exit(status))


def become_program(job, program):
    """The program's process: confined as bwrap and setpriv confine a cold run, then the driver."""
    # No setsid: the launcher made its own session (no controlling terminal), as bwrap --new-session.
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # bwrap --die-with-parent
    if os.getppid() != 0:  # the waiter is outside this pid namespace: 0, until it is gone
        os._exit(1)
    for signum in (*FORWARDED, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # held by the launcher around the fork
    os.closerange(4, 1024)  # the launcher's pipes and the cgroup listing among them
    os.chdir(job["cwd"])
    # Capabilities: root's are lost with the uid below; the bounding set goes too (bwrap --cap-drop).
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    os.setgroups([])
    os.setresgid(job["gid"], job["gid"], job["gid"])
    os.setresuid(job["uid"], job["uid"], job["uid"])
    # A uid change marks the process undumpable, which would make its /proc/self root's; an exec
    # (as after setpriv) would clear that, so clear it here.
    prctl(PR_SET_DUMPABLE, 1)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if program:
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
    # What the interpreter took from its environment at start, as a cold run's would have.
    env = dict(job["env"], PWD=job["cwd"])  # bwrap --chdir sets PWD
    os.environ.clear()
    os.environ.update(env)
    extra = [entry for entry in env.get("PYTHONPATH", "").split(":") if entry]
    sys.path[1:1] = [os.path.abspath(entry) for entry in extra]
    import site

    site.USER_BASE = None
    site.USER_SITE = None
    run_driver = warm_python._run
    for name in set(sys.modules) - STARTUP_MODULES:
        del sys.modules[name]
    run_driver()


if __name__ == "__main__":
    compile("pass", "<warm-up>", "exec")  # the compiler's first use, paid once here
    PLACEHOLDER = load_placeholder()
    # A program's process whose launcher is killed (a run's end, the server's) is handed to us,
    # not to the host's init, and reaped at once: the sandbox's pid 1 waits for exactly that.
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    forker.main(run)
