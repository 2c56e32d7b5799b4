# Host-side helper of a namespace-mode server (not a sandbox driver; it runs as the server's user,
# outside any sandbox). It pre-forks launchers: a child that has joined its run's cgroup, has its
# stdio connected to the server, and waits for the argv of the sandbox to exec. A fork of this
# small interpreter costs a fraction of a fork of the ~100 MB server, and the child execs bwrap
# directly, where a bash launcher first had to start a shell.
#
# Protocol, JSON lines. On stdin, one launcher each:
#   {"id": N, "address": "\0...", "token": "<32 hex>", "slots": ["ignore"|"pipe", ...], "cgroup": [dirs]}
# or {"retire": true} before the server ends stdin while it lives on (else its end is its death).
# On stdout: {"id": N, "ready": pid} | {"id": N, "failed": "why"} | {"id": N, "exit": code, "signal": name}
# Each "pipe" slot is a Unix stream socket connected to `address`, carrying the token and the slot
# number (4 digits) first. The child then reads its job on fd ARGV_FD until end of file:
# NUL-separated, the number of ulimit arguments, those arguments, then the argv to exec.
import ctypes
import fcntl
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time

ARGV_FD = 6
# bash's ulimit flags as the server sends them, and bash's unit for each.
RLIMITS = {
    "-v": (resource.RLIMIT_AS, 1024),
    "-f": (resource.RLIMIT_FSIZE, 1024),
    "-n": (resource.RLIMIT_NOFILE, 1),
    "-c": (resource.RLIMIT_CORE, 1024),
    "-t": (resource.RLIMIT_CPU, 1),
    "-d": (resource.RLIMIT_DATA, 1024),
    "-u": (resource.RLIMIT_NPROC, 1),
}


def child(job, ready):
    """In the forked child: become the launcher, then exec its job. Never returns."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    slots = job["slots"]
    # Every descriptor of ours lives above the slots, so that moving into a slot clobbers none.
    above = max(len(slots), 3) + 16
    moved = fcntl.fcntl(ready, fcntl.F_DUPFD_CLOEXEC, above)
    os.close(ready)
    ready = moved
    for directory in job["cgroup"]:
        with open(os.path.join(directory, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    place(connect(job), len(slots), above)
    os.write(ready, b"R")
    os.close(ready)
    data = read_all(ARGV_FD)
    os.close(ARGV_FD)
    parts = [part.decode("utf-8", "surrogateescape") for part in data.split(b"\0")[:-1]]
    if len(parts) < 2:
        os._exit(0)  # the server went away without a job
    count = int(parts[0])
    set_limits(parts[1 : 1 + count])
    argv = parts[1 + count :]
    default_signals()
    os.execve(argv[0], argv, {})


def default_signals():
    """
    Before an exec: every signal's default action and none blocked, as a program started by the
    drop program has them. What Python ignores for itself (SIGPIPE, SIGXFSZ) would otherwise stay
    ignored across the exec, which a shell could not undo (subprocess's restore_signals).
    """
    for signum in range(1, signal.NSIG):
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(signum, signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # not a signal here
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def set_limits(ulimit):
    """Apply bash ulimit arguments (flag, value, ...) as soft and hard limits."""
    for flag, value in zip(ulimit[::2], ulimit[1::2]):
        which, unit = RLIMITS[flag]
        resource.setrlimit(which, (int(value) * unit, int(value) * unit))


def connect(job):
    """The job's slots by number: its "pipe" slots connected to the server, /dev/null for ignored stdio."""
    # Node binds an abstract name padded with NULs to the whole sun_path (108 bytes on Linux).
    address = job["address"].encode()
    if address.startswith(b"\0"):
        address = address.ljust(108, b"\0")
    sources = {}
    try:
        for slot, kind in enumerate(job["slots"]):
            if kind == "pipe":
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.connect(address)
                    sock.sendall(("%s%04d" % (job["token"], slot)).encode())
                    sources[slot] = sock.detach()
            elif slot <= 2:
                sources[slot] = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    except BaseException:
        for fd in sources.values():
            os.close(fd)
        raise
    return sources


def place(sources, count, above):
    """Move `sources` into their slots (inheritable) and close the other slots above stderr."""
    # Out of the way of the targets first (above every slot), then into place: dup2 targets are
    # inheritable; every other descriptor is close-on-exec, PEP 446 and main() below.
    high = {slot: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above) for slot, fd in sources.items()}
    for fd in sources.values():
        os.close(fd)
    for slot, fd in high.items():
        os.dup2(fd, slot)
        os.close(fd)
    for slot in range(3, count):
        if slot not in high:
            try:
                os.close(slot)
            except OSError:
                pass


def read_all(fd):
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk


# The server that started this helper: its run cgroups are named after its pid (cgroups.ts).
SERVER = os.getppid()
PR_SET_PDEATHSIG = 1


def run_members(parents):
    """Pids in the server's run cgroups (codexec-run-<server pid>-*) under `parents`."""
    prefix = "codexec-run-%d-" % SERVER
    found = set()
    for parent in parents:
        try:
            names = [name for name in os.listdir(parent) if name.startswith(prefix)]
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(parent, name, "cgroup.procs")) as procs:
                    found.update(int(pid) for pid in procs.read().split())
            except (OSError, ValueError):
                pass  # removed meanwhile
    return found


def children_of(pid):
    """The children of every thread of `pid`."""
    found = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as listing:
            found += [int(child) for child in listing.read().split()]
    return found


def kill_with_children(pid):
    """
    SIGKILL `pid` and the children it has, stopped first so that it makes no more meanwhile. A
    sandbox still being built (its pid 1, the bwrap that bwrap cloned) has no --die-with-parent
    yet: killed after its monitor, it would wait for good for what the monitor never sends. A
    launcher's is in its run's cgroup (it joins before it execs bwrap), a zygote's is not.
    """
    try:
        os.kill(pid, signal.SIGSTOP)
        for child in children_of(pid):
            os.kill(child, signal.SIGKILL)
    except OSError:
        pass  # gone meanwhile
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def end(jobs_by_pid, parents=(), seconds=2.0, others=()):
    """
    The server is gone: kill every launcher left (with its children: kill_with_children), every
    other process of the helper's (`others`) and every process of the server's run cgroups, and
    reap them (and any orphan handed to us).
    """
    for pid in [*jobs_by_pid, *others]:
        kill_with_children(pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        members = run_members(parents)
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        left = True
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                left = False  # none left
                break
            if pid == 0:
                break
        if not left and not members:
            return
        time.sleep(0.005)


def die_with_server(on_death):
    """
    SIGTERM when the server dies (PR_SET_PDEATHSIG), handled by `on_death`: the end of stdin says
    the same, unless some other process holds the pipe's other end. A server already gone: now.
    """
    helper = os.getpid()

    def handler(*_):
        if os.getpid() != helper:  # a fork not yet exec'd: SIGTERM is meant for it, as by default
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        on_death()

    signal.signal(signal.SIGTERM, handler)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != SERVER:
        on_death()


class Loop:
    """
    A helper's loop (this forker's, the zygote's): jobs, one JSON line each on stdin; children
    reaped as they exit; descriptors watched until they turn readable; reports, JSON lines on
    stdout. The server's end (of stdin, or of stdout) ends every child in `children` and the loop.
    """

    def __init__(self, children):
        self.children = children
        self.cgroup_parents = set()  # where the server's run cgroups are (the jobs' cgroups' parents)
        self.retiring = False  # the end of stdin is the server's wish, not its death
        self.others = set()  # the helper's own processes beside the jobs' (a zygote's templates)
        die_with_server(self.server_gone)
        # Nothing this process inherited (beyond stdio) may reach a child, hence a sandbox.
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                try:
                    os.set_inheritable(fd, False)
                except OSError:
                    pass
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector = selectors.DefaultSelector()
        self.selector.register(sys.stdin.buffer.raw, selectors.EVENT_READ, "jobs")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "children")

    def server_gone(self):
        end(self.children, self.cgroup_parents, others=self.others)
        os._exit(0)

    def report(self, message):
        try:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the server is gone, and with it whoever would read this
            self.server_gone()

    def watch(self, fd, data):
        self.selector.register(fd, selectors.EVENT_READ, data)

    def unwatch(self, fd):
        self.selector.unregister(fd)

    def run(self, on_job, on_exit, on_ready):
        """on_job(job) per job, on_exit(pid, status) per child reaped, on_ready(fd, data) per
        watched descriptor readable (no longer watched then)."""
        pending = b""
        while True:
            for key, _ in self.selector.select():
                if key.data == "jobs":
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        # Retired: the launchers left go. Else the server is gone: its runs too.
                        parents = () if self.retiring else self.cgroup_parents
                        return end(self.children, parents, others=self.others)
                    pending += chunk
                    while b"\n" in pending:
                        line, pending = pending.split(b"\n", 1)
                        job = json.loads(line)
                        if job.get("retire"):
                            self.retiring = True
                            continue
                        self.cgroup_parents.update(os.path.dirname(d) for d in job.get("cgroup", ()))
                        on_job(job)
                elif key.data == "children":
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    while True:
                        try:
                            pid, status = os.waitpid(-1, os.WNOHANG)
                        except ChildProcessError:
                            break
                        if pid == 0:
                            break
                        on_exit(pid, status)
                else:
                    watched = self.selector.get_map().get(key.fd)
                    if watched is None or watched.data is not key.data:
                        continue  # unwatched earlier in this batch (and its number maybe reused)
                    self.selector.unregister(key.fd)
                    on_ready(key.fd, key.data)


def main():
    jobs_by_pid = {}
    loop = Loop(jobs_by_pid)

    def on_job(job):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(ready_r)
                child(job, ready_w)
            except BaseException as error:
                try:  # the ready pipe has moved: say why on stderr too
                    os.write(2, ("codexec forker: launcher %s: %r\n" % (job["id"], error)).encode())
                finally:
                    os._exit(127)
        os.close(ready_w)
        jobs_by_pid[pid] = job["id"]
        loop.watch(ready_r, (job["id"], pid))

    def on_exit(pid, status):
        job_id = jobs_by_pid.pop(pid, None)
        if job_id is None:
            return
        if os.WIFSIGNALED(status):
            loop.report({"id": job_id, "exit": None, "signal": signal.Signals(os.WTERMSIG(status)).name})
        else:
            loop.report({"id": job_id, "exit": os.WEXITSTATUS(status), "signal": None})

    def on_ready(fd, data):
        job_id, pid = data
        said = os.read(fd, 4096)
        os.close(fd)
        if said == b"R":
            loop.report({"id": job_id, "ready": pid})
        else:
            loop.report({"id": job_id, "failed": said[1:].decode(errors="replace") or "the launcher died"})

    loop.run(on_job, on_exit, on_ready)


if __name__ == "__main__":
    main()
