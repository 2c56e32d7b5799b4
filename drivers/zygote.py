# Host-side helper of a root namespace-mode server: a forker (forker.py) that is itself the
# sandbox's Python, started once and initialised (site, the warm driver) so that a warm Python
# need not pay an interpreter start (~20 ms of CPU here) per run. It runs the interpreter the
# sandbox uses, as root, with the sandbox's environment minus anything a run or an agent controls
# (no PYTHONPATH, a HOME that does not exist), and never runs code it was sent.
#
# It takes forker.py's jobs (the run's stdio slots, its cgroup) with a "sandbox" each, and ulimit
# arguments and the seccomp program (hex):
#   {"bwrap": [bwrap argv], "placeholder": [a command], "uid": U, "gid": G, "env": {...}, "cwd": "..."}
# No process of its own per run, no launcher: a fork of this interpreter costs every page it then
# writes (copy-on-write), so a run gets one fork, its program's.
#   1. It connects the run's stdio and starts bwrap (posix_spawn), which builds the run's sandbox
#      exactly as for a cold run around a placeholder: its first output says the sandbox is
#      complete, and it lives until its stdin closes. On x86-64 that is PLACEHOLDER, else the
#      job's (`cat FILE -`). Where the job has a "nest" (native/nest.c), the nest builds the same
#      sandbox instead, from a template mount namespace this process keeps per template (Templates),
#      and its own pid 1 says so and lives as long; where a template cannot be made, bwrap does.
#   2. It forks the program's process into the sandbox's pid namespace (setns for its children,
#      then back). That process joins the run's cgroup and a cgroup namespace of its own there,
#      then the sandbox's other namespaces (setns: ipc, uts, net, mnt);
#   3. and drops everything bwrap and the drop program would for a cold run: no capabilities
#      (bounding set emptied), the sandbox uid/gid with no groups, no_new_privs, the seccomp filter,
#      rlimits, the environment; then it is the warm driver (warm_python.py), waiting on fd 3.
#   4. When the program's process exits this kills its sandbox, and reports the run's end with its
#      status as bwrap would (128+N for signal N). Signals for the run are the server's to send (to
#      its cgroup: the program's processes alone).
# A node zygote (`zygote.py --node NODE ADDON TEMPLATE`) does the same for warm Node drivers, but
# a Python cannot fork a Node: it starts one Node, the template (drivers/zygote_node.mjs), and at
# step 2 hands it the run's stdio and the sandbox's namespaces (SCM_RIGHTS); the template forks
# into them and the fork confines itself as step 3 says. The template reports the fork's pid and,
# once it has reaped it, its wait status; this process does the rest as for a Python run.
# In sandbox mode landlock a job's sandbox has "landlock" (a confine script's Landlock part, hex:
# src/sandbox/landlock/confine.ts) instead of "bwrap": no sandbox to build, no namespace to join;
# the program's process is forked at once and confines itself (run_script) after no_new_privs.
import sys

# What `python script.py` has imported when the script starts: a program forked from here gets
# just these, as it would in a cold run; whatever the zygote imported for itself is dropped.
STARTUP_MODULES = frozenset(sys.modules)

import ctypes  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402

import forker  # noqa: E402
import warm_python  # noqa: E402

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWPID = 0x20000000
# The sandbox's namespaces its program joins, in the order joined: the mount namespace last (it
# moves the root). The pid namespace is joined for the fork only; the cgroup one is its own.
NAMESPACES = (
    ("ipc", 0x08000000),
    ("uts", 0x04000000),
    ("net", 0x40000000),
    ("pid", CLONE_NEWPID),
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


# Out of the way of the runs' descriptors; each bwrap gets it as fd 3, no program's process at all.
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


libc.syscall.restype = ctypes.c_long
STORE = 1000  # the confine launcher's pseudo call (src/sandbox/landlock/confine.ts)
MAY_FAIL = 1 << 12


def run_script(script):
    """Make the calls of a confine script, as the launcher does (never an exec: this process goes on)."""
    buffer = ctypes.create_string_buffer(script, len(script))
    base = ctypes.addressof(buffer)
    (count,) = struct.unpack_from("<Q", buffer, 0)
    for step in range(count):
        nr, flags, *args, store = struct.unpack_from("<QQ6QQ", buffer, 8 + 72 * step)
        values = []
        for i, value in enumerate(args):
            mode = (flags >> (2 * i)) & 3
            if mode == 1:
                value += base
            elif mode == 2:
                (value,) = struct.unpack_from("<Q", buffer, value)
            values.append(value)
        if nr == STORE:
            struct.pack_into("<Q", buffer, values[0] - base, values[1])
            continue
        result = libc.syscall(ctypes.c_long(nr), *(ctypes.c_ulong(value) for value in values))
        if result == -1:
            error = ctypes.get_errno()
            if not flags & MAY_FAIL:
                raise OSError(error, "confine step %d: %s" % (step, os.strerror(error)))
            result = -error
        if store != (1 << 64) - 1:
            struct.pack_into("<q", buffer, store, result)


def bwrap_exit(status):
    """The exit code bwrap reports for its child's wait status."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


class Templates:
    """
    The nest's templates (native/nest.c `template`), by command line: each a process holding the
    mount namespace that runs' sandboxes are copied from, until its stdin ends. The few most
    recently used are kept (a template changes only when the sandbox's shared tree does: a new
    /etc copy, another interpreter).
    """

    KEPT = 4

    def __init__(self, others):
        self.held = {}  # command line -> (pid, its stdin, its mount namespace), oldest first
        self.others = others  # the loop's: killed with the zygote's runs when the server goes
        self.failed = set()  # command lines whose template could not be made: bwrap makes those

    def namespace(self, argv):
        """The template's mount namespace (a descriptor), made on first use; None if it cannot be."""
        key = "\0".join(argv)
        if key in self.failed:
            return None
        entry = self.held.pop(key, None)
        if entry is None:
            try:
                entry = self.make(argv)
            except OSError as error:
                if len(self.failed) >= 16:
                    self.failed.clear()
                self.failed.add(key)
                os.write(2, ("codexec zygote: no template, bwrap makes these sandboxes: %s\n" % error).encode())
                return None
        self.held[key] = entry
        while len(self.held) > self.KEPT:
            self.drop(next(iter(self.held)))
        return entry[2]

    def make(self, argv):
        life_r, life_w = os.pipe()
        said_r, said_w = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, life_r, 0), (os.POSIX_SPAWN_DUP2, said_w, 1)]
        try:
            pid = os.posix_spawn(argv[0], argv, {}, file_actions=actions, setsid=True)
        except BaseException:
            for fd in (life_r, life_w, said_r, said_w):
                os.close(fd)
            raise
        self.others.add(pid)
        os.close(life_r)
        os.close(said_w)
        try:
            # A few mounts: it says so at once, or exits. One that hangs is not waited for.
            said = os.read(said_r, 64) if select.select([said_r], [], [], 5)[0] else b""
        finally:
            os.close(said_r)
        try:
            if said != b"ready\n":
                forker.kill_with_children(pid)
                raise OSError("the template was not made (the nest says why above)")
            namespace = os.open("/proc/%d/ns/mnt" % pid, os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            os.close(life_w)
            raise
        return pid, life_w, namespace

    def drop(self, key):
        pid, life, namespace = self.held.pop(key)
        os.close(life)  # it exits (reaped as any child); runs made from it keep their copies
        os.close(namespace)
        self.others.discard(pid)


TEMPLATES = None  # set by serve()


class Run:
    """One forked run: its sandbox (bwrap around the placeholder), then its program's process."""

    def __init__(self, job):
        self.id = job["id"]
        self.job = job
        self.landlock = "landlock" in job["sandbox"]
        self.sources = {}  # the run's stdio, connected here, until the program's process has them
        self.bwrap = None
        self.program = None
        self.life = None  # the placeholder's stdin: it runs until this closes
        self.said = None  # the placeholder's stdout: its first line says the sandbox is complete
        self.status = None  # the program's wait status
        self.sandbox_gone = False
        self.reported = False


def start(job):
    """Connect the run's stdio and start its sandbox; the rest follows when it is complete."""
    run = Run(job)
    run.sources = forker.connect(job)
    if run.landlock:
        return run  # no sandbox to build: the program's process is forked at once
    life_r, life_w = os.pipe()  # the placeholder runs until this ends
    said_r, said_w = os.pipe()  # its first output: the sandbox is complete
    # posix_spawn (vfork underneath), not fork: a fork of this interpreter copies its page tables.
    # bwrap gets the placeholder's pipes as stdin and stdout, and the run's stderr for its errors.
    actions = [(os.POSIX_SPAWN_DUP2, life_r, 0), (os.POSIX_SPAWN_DUP2, said_w, 1)]
    actions.append((os.POSIX_SPAWN_DUP2, run.sources[2], 2))
    nest = job["sandbox"].get("nest")
    template = TEMPLATES.namespace(nest["template"]) if nest else None
    if template is not None:
        # The nest enters the template's mount namespace (fd 3), copies it, and makes the rest.
        actions.append((os.POSIX_SPAWN_DUP2, template, 3))
        argv = nest["run"]
    else:
        command = job["sandbox"]["placeholder"]
        if PLACEHOLDER is not None:
            # bwrap passes the descriptor down; the sandbox's /proc reaches the memfd through it.
            actions.append((os.POSIX_SPAWN_DUP2, PLACEHOLDER, 3))
            command = ["/proc/self/fd/3"]
        argv = job["sandbox"]["bwrap"] + command
    try:
        run.bwrap = os.posix_spawn(argv[0], argv, {}, file_actions=actions, setsid=True)
    except BaseException:
        for fd in (life_w, said_r, *run.sources.values()):
            os.close(fd)
        raise
    finally:
        os.close(life_r)
        os.close(said_w)
    run.life = life_w
    run.said = said_r
    return run


def in_child(body, *args, _write=os.write, _exit=os._exit):
    """A forked child's whole life: `body` never returns, and whatever it raises ends the process.
    The exits are bound here: warm_python.py empties __main__ (this module, in the zygote's forks),
    and a failure after that must not climb back into the zygote's own loop."""
    try:
        body(*args)
    except BaseException as error:
        try:
            _write(2, ("codexec zygote: %r\n" % (error,)).encode())
        finally:
            _exit(127)
    _exit(127)


def fork_confined(run):
    """Sandbox mode landlock: fork the program's process, which confines itself. Its pid."""
    pid = os.fork()
    if pid == 0:
        in_child(become_program, run, [])
    for fd in run.sources.values():
        os.close(fd)
    run.sources = {}
    return pid


def fork_program(run, own_pid_ns):
    """The sandbox is complete: fork the program's process into its namespaces. Its pid."""
    (leader,) = forker.children_of(run.bwrap)
    joined = []
    try:
        for name, flag in NAMESPACES:
            path = "/proc/%d/ns/%s" % (leader, name)
            if os.stat(path).st_ino != os.stat("/proc/self/ns/%s" % name).st_ino:
                joined.append((name, flag, os.open(path, os.O_RDONLY | os.O_CLOEXEC)))
            # else not unshared (the network, when it is allowed)
        pid_ns = [fd for name, _, fd in joined if name == "pid"]
        # Only the pid namespace is joined here, and for children only: this process stays where
        # it is, and its next child is the sandbox's. The program's process joins the others.
        if pid_ns:
            check(libc.setns(pid_ns[0], CLONE_NEWPID), "setns pid")
        try:
            pid = os.fork()
            if pid == 0:
                in_child(become_program, run, [entry for entry in joined if entry[0] != "pid"])
        finally:
            # Never fork into a sandbox again: this process cannot go on if it cannot return.
            if pid_ns and libc.setns(own_pid_ns, CLONE_NEWPID) != 0:
                os._exit(70)
    finally:
        for _, _, fd in joined:
            os.close(fd)
    for fd in run.sources.values():
        os.close(fd)  # the program's process holds the run's stdio alone: its end is theirs
    run.sources = {}
    return pid


# The template's descriptors 0 to RESERVED-1 are open before it starts, so that Node's own lie above
# the run's stdio slots (native/node_fork.c); the job socket is the next.
RESERVED = 16


class NodeTemplate:
    """The Node that forks node runs (drivers/zygote_node.mjs), and the runs it is forking."""

    def __init__(self, argv):
        self.socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Its stdout and stderr are sockets, as a run's are (Node binds process.stdout to the kind
        # it finds at start-up); what it says there is relayed to this process's stderr.
        self.said, said_w = socket.socketpair()
        null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in (theirs.fileno(), said_w.fileno(), null)]
        job_fd, out_fd, null_fd = high
        actions = [(os.POSIX_SPAWN_DUP2, job_fd, RESERVED), (os.POSIX_SPAWN_DUP2, null_fd, 0)]
        actions += [(os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, out_fd, 2)]
        actions += [(os.POSIX_SPAWN_DUP2, null_fd, fd) for fd in range(3, RESERVED)]
        try:
            self.pid = os.posix_spawn(argv[0], argv + [str(RESERVED)], dict(os.environ), file_actions=actions)
        finally:
            for fd in (*high, null):
                os.close(fd)
            theirs.close()
            said_w.close()
        self.forking = []  # the runs sent, in order: the template answers each in turn

    def fork(self, run):
        """Send the run's job (its sandbox is complete): the template answers with its fork's pid."""
        (leader,) = forker.children_of(run.bwrap)
        pid_ns, joined = None, []
        try:
            for name, _ in NAMESPACES:
                path = "/proc/%d/ns/%s" % (leader, name)
                if os.stat(path).st_ino != os.stat("/proc/self/ns/%s" % name).st_ino:
                    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                    if name == "pid":
                        pid_ns = fd
                    else:
                        joined.append((name, fd))
            slots = [run.sources[slot] for slot in range(len(run.sources))]
            job, sandbox = run.job, run.job["sandbox"]
            text = json.dumps(
                {
                    "cgroup": job["cgroup"],
                    "ulimit": job["ulimit"],
                    "seccomp": job["seccomp"],
                    "namespaces": [name for name, _ in joined],
                    "pid_namespace": pid_ns is not None,
                    "sandbox": {key: sandbox[key] for key in ("uid", "gid", "env", "cwd")},
                }
            )
            head = "%d %d\n" % (pid_ns is not None, len(slots))
            fds = ([pid_ns] if pid_ns is not None else []) + slots + [fd for _, fd in joined]
            socket.send_fds(self.socket, [(head + text).encode()], fds)
        finally:
            for fd in ([pid_ns] if pid_ns is not None else []) + [fd for _, fd in joined]:
                os.close(fd)
        for fd in run.sources.values():
            os.close(fd)  # the fork holds the run's stdio alone
        run.sources = {}
        self.forking.append(run)


def become_program(run, namespaces):
    """The program's process: confined as bwrap and a drop confine a cold run, then the driver."""
    job, sandbox = run.job, run.job["sandbox"]
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # bwrap --die-with-parent
    # A process group of its own: in the zygote's, kill(0, ...) would reach every other run forked
    # from it, whatever its sandbox or principal (a cold run's group is its sandbox's).
    os.setpgid(0, 0)
    if not run.landlock and os.getppid() != 0:  # the zygote is outside this pid namespace: 0, until it is gone
        os._exit(1)
    signal.set_wakeup_fd(-1)
    for signum in (*FORWARDED, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Into the run's cgroup (by the host's paths: before the mount namespace), then a cgroup
    # namespace rooted there, as bwrap --unshare-cgroup makes for a cold run started inside it.
    for directory in job["cgroup"]:
        fd = os.open(os.path.join(directory, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, b"0")  # this process
        finally:
            os.close(fd)
    if not run.landlock:
        check(libc.unshare(CLONE_NEWCGROUP), "unshare cgroup")
    # setns(2), in order: the mount namespace last (it moves the root).
    for name, flag, fd in namespaces:
        check(libc.setns(fd, flag), "setns %s" % name)
    forker.place(run.sources, 4, 16)
    os.closerange(4, 1 << 20)  # everything of the zygote's: other runs' stdio, its pipes
    forker.set_limits(job["ulimit"])
    os.chdir(sandbox["cwd"])
    # Capabilities: root's are lost with the uid below; the bounding set goes too (bwrap --cap-drop).
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    # Landlock before the drop, as a cold run's launcher confines: its rules open paths only the
    # server's uid may (the directories it holds, by /proc/<server pid>/fd).
    if run.landlock:
        run_script(bytes.fromhex(sandbox["landlock"]))
    os.setgroups([])
    os.setresgid(sandbox["gid"], sandbox["gid"], sandbox["gid"])
    os.setresuid(sandbox["uid"], sandbox["uid"], sandbox["uid"])
    # A uid change marks the process undumpable, which would make its /proc/self root's; an exec
    # (as after a cold run's drop) would clear that, so clear it here.
    prctl(PR_SET_DUMPABLE, 1)
    program = bytes.fromhex(job["seccomp"])
    if program:
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
    env = dict(sandbox["env"], PWD=sandbox["cwd"])  # bwrap --chdir sets PWD
    if "exec" in sandbox:
        # Another program (bash's warm driver): started as the drop program would start it.
        forker.default_signals()
        argv = sandbox["exec"]
        os.execve(argv[0], argv, env)
    # What the interpreter took from its environment at start, as a cold run's would have.
    os.environ.clear()
    os.environ.update(env)
    extra = [entry for entry in env.get("PYTHONPATH", "").split(":") if entry]
    sys.path[1:1] = [os.path.abspath(entry) for entry in extra]
    import site

    # What drivers/mpl/sitecustomize.py does at a cold start: packages after the standard library,
    # before the system's site- and dist-packages.
    sites = {os.path.abspath(p) for p in site.getsitepackages()}
    at = next((i for i, e in enumerate(sys.path) if os.path.abspath(e or ".") in sites), len(sys.path))
    sys.path[at:at] = [e for e in env.get("CODEXEC_PYTHON_PACKAGES", "").split(":") if e and e not in sys.path]

    site.USER_BASE = None
    site.USER_SITE = None
    run_driver = warm_python._run
    for name in set(sys.modules) - STARTUP_MODULES:
        del sys.modules[name]
    run_driver()


def serve(template_argv=None):
    """
    The forker's protocol (forker.py), each job with a "sandbox" to fork its program into: reports
    {"id", "ready": the program's pid} once it waits for its job, {"id", "failed": why}, and
    {"id", "exit": code, "signal": null} once the program's process and its sandbox are gone.
    """
    global TEMPLATES
    runs_by_pid = {}  # the sandboxes' bwrap (or nest) and the programs' processes
    loop = forker.Loop(runs_by_pid)
    TEMPLATES = Templates(loop.others)
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    # A session without a controlling terminal (bwrap --new-session), which the programs' processes
    # inherit: as in a cold run, none of them leads one (each leads a process group of its own).
    os.setsid()
    # The sandboxes' pid 1s (the nest's, bwrap's init) outlive their parent by the moment it takes
    # them to die when this process kills it: reaped here, not left as zombies to the host's init.
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    template = NodeTemplate(template_argv) if template_argv else None
    if template:
        loop.watch(template.socket.fileno(), "template")
        loop.watch(template.said.fileno(), "said")

    def failed(run, why):
        if not run.reported:
            run.reported = True
            loop.report({"id": run.id, "failed": why})

    def on_job(job):
        if template and "landlock" in job["sandbox"]:
            return loop.report({"id": job["id"], "failed": "a node zygote forks into namespace sandboxes only"})
        try:
            run = start(job)
        except Exception as error:
            loop.report({"id": job["id"], "failed": "the sandbox did not start: %r" % (error,)})
            return
        if run.landlock:
            try:
                run.program = fork_confined(run)
            except Exception as error:
                for fd in run.sources.values():
                    os.close(fd)
                failed(run, "could not fork: %r" % (error,))
                return
            run.sandbox_gone = True  # there is none: the program's end is the run's
            runs_by_pid[run.program] = run
            loop.report({"id": run.id, "ready": run.program})
            return
        runs_by_pid[run.bwrap] = run
        loop.watch(run.said, run)

    def on_exit(pid, status):
        run = runs_by_pid.pop(pid, None)
        if run is None:
            return
        if pid == run.program:
            run.status = status
            # Whatever the program left behind dies with the sandbox's pid namespace, as after a
            # cold run.
            if not run.sandbox_gone:
                os.kill(run.bwrap, signal.SIGKILL)
        else:
            run.sandbox_gone = True
            os.close(run.life)
            if run.program is None:
                if run.said is not None:
                    loop.unwatch(run.said)
                    os.close(run.said)
                    run.said = None
                for fd in run.sources.values():
                    os.close(fd)
                run.sources = {}
                failed(run, "the sandbox did not start (bwrap: %d)" % bwrap_exit(status))
        # The program's process is reaped and its sandbox gone: the run's end, as bwrap's.
        if run.status is not None and run.sandbox_gone and not run.reported:
            run.reported = True
            loop.report({"id": run.id, "exit": bwrap_exit(run.status), "signal": None})

    def on_template(message):
        """What the node template says: a fork's pid or failure (in job order), a fork's end."""
        if not message:  # it is gone: so are its forks (their PR_SET_PDEATHSIG), and this zygote
            for run in template.forking:
                os.kill(run.bwrap, signal.SIGKILL)
                failed(run, "the node template died")
            for pid, run in list(runs_by_pid.items()):
                if pid == run.program and run.status is None:
                    on_exit(pid, signal.SIGKILL)
            os._exit(1)
        words = message.decode().split(" ", 2)
        if words[0] == "exit":
            on_exit(int(words[1]), int(words[2]))
        elif words[0] == "pid":
            run = template.forking.pop(0)
            run.program = int(words[1])
            runs_by_pid[run.program] = run
            loop.report({"id": run.id, "ready": run.program})
        else:
            run = template.forking.pop(0)
            os.kill(run.bwrap, signal.SIGKILL)
            failed(run, "could not fork into the sandbox: %s" % message.decode(errors="replace"))
        loop.watch(template.socket.fileno(), "template")

    def on_ready(fd, run):
        if run == "template":
            return on_template(template.socket.recv(4096))
        if run == "said":
            chunk = os.read(fd, 65536)
            if chunk:
                os.write(2, chunk)
                loop.watch(fd, "said")
            return None
        said = os.read(fd, 64)
        os.close(fd)
        run.said = None
        if not said:
            return  # bwrap failed (and said why on stderr): its exit reports it
        try:
            if template:
                return template.fork(run)  # its answer reports the fork
            run.program = fork_program(run, own_pid_ns)
        except Exception as error:
            os.kill(run.bwrap, signal.SIGKILL)
            failed(run, "could not fork into the sandbox: %r" % (error,))
            return
        runs_by_pid[run.program] = run
        loop.report({"id": run.id, "ready": run.program})

    loop.run(on_job, on_exit, on_ready)


if __name__ == "__main__":
    compile("pass", "<warm-up>", "exec")  # the compiler's first use, paid once here
    PLACEHOLDER = load_placeholder()
    # --node NODE ADDON TEMPLATE: the template is started as `NODE --single-threaded
    # --no-memory-reducer TEMPLATE ADDON <job fd>`: V8 then posts no work to its helper threads,
    # which a fork does not have (Node would wait for that work at the end of the run's event
    # loop). Nor does it arm the memory reducer's timer (8 s after a GC): the template never turns
    # its event loop (it waits in the addon's poll), so every fork made or used after that time
    # fired the timer at its start, and its loop never emptied: the run ended at its timeout.
    node = sys.argv[2:5] if sys.argv[1:2] == ["--node"] else None
    serve([node[0], "--single-threaded", "--no-memory-reducer", node[2], node[1]] if node else None)
