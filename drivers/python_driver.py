"""codexec session driver for Python: a REPL that reads code from the control channel.

Protocol on fd 3 (moved to a high, close-on-exec fd at start-up): frames of
`<byte length in decimal>\n<UTF-8 JSON>`. In: {"type":"exec","id":...,"code":...}.
An exec may carry "mark" (before "code"): written on stdout and stderr as "\n<mark>\n" after
the cell's output: `done` travels on another channel, so the server cannot tell from it alone
that all of the output is in (its reads of the two race; a relay lags further).
Out: {"type":"ready",...} once, then one {"type":"done","id":...,"status":...,"exit_code":...}
per exec, written only after the cell's stdout/stderr have been flushed. User output never
travels on the control channel, so nothing the code prints can forge a protocol message.

REPL semantics: the cell is parsed with `ast`; everything but a trailing expression is executed,
the trailing expression is evaluated and shown with sys.displayhook (repr, sets `_`). Top-level
`await` works. SIGINT raises KeyboardInterrupt only while a cell runs; the namespace survives.

Background processes (start_process): the channel is read by a thread of its own, so "proc_*"
frames are served while a cell runs; exec frames are queued for the main thread. Each process is
`bash -c command` in a process group of its own with SIGINT and SIGQUIT ignored (as a
non-interactive shell does for `cmd &`: a send's interrupt, which reaches every process of the
sandbox, leaves it running), stdout and stderr on one pipe, in the order written. Where the sandbox
refuses new sessions (landlock mode without a cgroup keeps every process in the run's process group),
it stays in the driver's group, and a kill stops then kills its process tree instead. Out:
{"type":"proc_started","proc","pid"}, {"type":"proc_output","proc","data":base64},
{"type":"proc_exit","proc","exit_code","signal"} after its output, {"type":"proc_error","proc","message"}.
"""

import _queue
import _thread
import ast
import builtins
import fcntl
import io
import json
import linecache
import os
import signal
import sys
import traceback
import types

if "CODEXEC_BRIDGE_SOCKET" in os.environ:  # code mode (start_session with allowed_tools)
    import codexec_bridge  # on PYTHONPATH for such sessions; takes the socket and token from the env

    codexec_bridge.install()

CO_COROUTINE = 0x0080


def open_control():
    fd = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(3)
    return fd, io.open(fd, "rb", buffering=65536, closefd=False)


def read_frame(reader):
    header = reader.readline()
    if not header:
        return None
    size = int(header)
    body = reader.read(size)
    if len(body) != size:
        return None
    return json.loads(body.decode("utf-8"))


WRITE_LOCK = _thread.allocate_lock()


def write_frame(fd, message):
    body = json.dumps(message).encode("utf-8")
    data = b"%d\n%s" % (len(body), body)
    with WRITE_LOCK:  # the main thread and the process threads share the channel
        while data:
            data = data[os.write(fd, data):]


# Output relayed per process and second, at most (docs/tools.md: background processes).
RELAY_BYTES_PER_SECOND = 2 * 1024 * 1024


class Processes:
    """The session's background processes, served from the channel's reader thread."""

    def __init__(self, fd):
        self.fd = fd
        self.cwd = os.getcwd()
        self.procs = {}
        # False once setsid was refused: every later process shares the driver's group too.
        self.groups = True

    def handle(self, message):
        import base64  # here, not at start-up: most sessions never start a process

        kind, proc = message.get("type"), message.get("proc")
        try:
            if kind == "proc_start":
                self.start(proc, message["command"])
            elif kind == "proc_stdin" and proc in self.procs:
                self.procs[proc][1].put((base64.b64decode(message.get("data", "")), bool(message.get("eof"))))
            elif kind == "proc_kill" and proc in self.procs:
                child, _, grouped = self.procs[proc]
                if grouped:
                    os.killpg(child.pid, signal.SIGKILL)
                elif child.returncode is None:  # else its pid may be another's by now
                    kill_tree(child.pid)
        except Exception as error:  # never let a process take the channel down
            write_frame(self.fd, {"type": "proc_error", "proc": proc, "message": str(error)})

    def start(self, proc, command):
        import subprocess

        def popen(session):
            return subprocess.Popen(
                ["bash", "-c", 'trap "" INT QUIT; eval "$1"', "codexec-process", command],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                cwd=self.cwd, start_new_session=session, close_fds=True,
            )

        try:
            child = popen(self.groups)
        except PermissionError:
            if not self.groups:
                raise
            child = popen(False)  # raises again if setsid was not the cause
            self.groups = False
        inbox = _queue.SimpleQueue()
        self.procs[proc] = (child, inbox, self.groups)
        write_frame(self.fd, {"type": "proc_started", "proc": proc, "pid": child.pid})
        relayed = _thread.allocate_lock()
        relayed.acquire()
        _thread.start_new_thread(self.relay, (proc, child, relayed))
        _thread.start_new_thread(self.feed, (child, inbox))
        _thread.start_new_thread(self.wait, (proc, child, relayed))

    def relay(self, proc, child, relayed):
        import base64

        import time

        out = child.stdout.fileno()
        window, sent = time.monotonic(), 0
        try:
            while True:
                try:
                    data = os.read(out, 65536)
                except OSError:
                    break
                if not data:
                    break
                write_frame(self.fd, {"type": "proc_output", "proc": proc, "data": base64.b64encode(data).decode()})
                # A flood (`yes`) would keep the server busy decoding: past the rate the process
                # waits on its full pipe, as on a slow terminal.
                sent += len(data)
                if sent >= RELAY_BYTES_PER_SECOND:
                    time.sleep(max(0.0, window + 1 - time.monotonic()))
                    window, sent = time.monotonic(), 0
        finally:
            relayed.release()

    @staticmethod
    def feed(child, inbox):
        while True:
            data, eof = inbox.get()
            try:
                if data:
                    child.stdin.write(data)
                    child.stdin.flush()
                if eof:
                    child.stdin.close()
                    return
            except (OSError, ValueError):
                return  # the process closed its stdin or exited

    def wait(self, proc, child, relayed):
        status = child.wait()
        # Its output first; a descendant that keeps the pipe open does not hold the exit back long.
        if relayed.acquire(timeout=1.0):
            relayed.release()
        code, sig = (status, None) if status >= 0 else (None, signal.Signals(-status).name)
        write_frame(self.fd, {"type": "proc_exit", "proc": proc, "exit_code": code, "signal": sig})
        self.procs[proc][1].put((b"", True))


def kill_tree(pid):
    """SIGKILL `pid` and its descendants, stopped first so that none forks a child the kill misses."""
    stopped = set()
    for _ in range(100):
        tree = [each for each in tree_of(pid) if each not in stopped]
        if not tree:
            break
        for each in tree:
            try:
                os.kill(each, signal.SIGSTOP)
            except OSError:
                pass  # gone
            stopped.add(each)
    for each in stopped:
        try:
            os.kill(each, signal.SIGKILL)
        except OSError:
            pass


def tree_of(pid):
    """`pid` and its descendants now, from /proc (a process orphaned before is not among them)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as file:
                stat = file.read()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    found, queue = [pid], [pid]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


def flush_std():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def write_mark(outputs, mark):
    data = b"\n%s\n" % mark.encode("utf-8")
    for out in outputs:
        try:
            os.write(out, data)
        except OSError:
            pass  # closed by the code: the server stops waiting for it after a while


class Kernel:
    def __init__(self):
        self.module = types.ModuleType("__main__")
        self.module.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = self.module
        self.count = 0
        self.loop = None

    def run(self, code):
        """Run one cell; returns (status, exit_code)."""
        self.count += 1
        filename = "<cell %d>" % self.count
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        namespace = self.module.__dict__
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        try:
            tree = ast.parse(code, filename, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
            tail = compile(last, filename, "eval", flags=flags, dont_inherit=True) if last else None
        except (SyntaxError, ValueError, OverflowError) as error:
            traceback.print_exception(type(error), error, None)
            return "error", 1
        try:
            self.evaluate(body, namespace)
            if tail is not None:
                value = self.evaluate(tail, namespace)
                sys.displayhook(value)
            return "ok", 0
        except KeyboardInterrupt as error:
            self.print_error(error)
            return "interrupted", 130
        except SystemExit as error:
            code_ = error.code
            if code_ is None or isinstance(code_, int):
                status = code_ or 0
            else:
                print(code_, file=sys.stderr)
                status = 1
            print("SystemExit: %s (the session keeps running)" % (code_,), file=sys.stderr)
            return ("ok" if status == 0 else "error"), status
        except BaseException as error:
            self.print_error(error)
            return "error", 1

    def evaluate(self, code, namespace):
        result = eval(code, namespace)
        if code.co_flags & CO_COROUTINE:
            if self.loop is None:
                import asyncio

                self.loop = asyncio.new_event_loop()
                asyncio.set_event_loop(self.loop)
            result = self.loop.run_until_complete(result)
        return result

    @staticmethod
    def print_error(error):
        # Drop the frames of this driver: the traceback starts in the user's cell.
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)


def save_figures():
    """Notebook-like: the figures a cell made or left open are saved for its result, then closed.

    Only when the cell's code imported pyplot: importing matplotlib here would cost ~300 ms."""
    if "matplotlib.pyplot" not in sys.modules or not os.environ.get("CODEXEC_FIGURES_DIR"):
        return
    try:
        # The backend (drivers/mpl, on PYTHONPATH): loaded already, unless the code chose another.
        import codexec_figures

        codexec_figures.save_figures()
    except Exception as error:
        print("codexec: could not save the figures: %s" % (error,), file=sys.stderr)


def run_guarded(kernel, code):
    # SIGINT is honoured only while user code runs; a late one is absorbed here, never in the loop.
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            return kernel.run(code)
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return "interrupted", 130


def read_channel(reader, cells, processes):
    while True:
        message = read_frame(reader)
        if message is None:
            cells.put(None)
            return
        if message.get("type") == "exec":
            cells.put(message)
        elif str(message.get("type")).startswith("proc_"):
            processes.handle(message)


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fd, reader = open_control()
    # The session's stdin: code reading it waits for input, which the server sees and reports.
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    # Imports resolve from the working directory, as in `python -c`, not from this driver's folder.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path[0] = ""
    sys.argv = [""]
    kernel = Kernel()
    # The real stdout and stderr, whatever a cell does to fds 1 and 2: marks go there.
    outputs = [fcntl.fcntl(n, fcntl.F_DUPFD_CLOEXEC, 201) for n in (1, 2)]
    cells = _queue.SimpleQueue()
    _thread.start_new_thread(read_channel, (reader, cells, Processes(fd)))
    write_frame(fd, {"type": "ready", "pid": os.getpid(), "version": sys.version.split()[0]})
    while True:
        message = cells.get()
        if message is None:
            break
        status, exit_code = run_guarded(kernel, message["code"])
        save_figures()
        flush_std()
        if message.get("mark"):
            write_mark(outputs, message["mark"])
        write_frame(fd, {"type": "done", "id": message["id"], "status": status, "exit_code": exit_code})
    os._exit(0)


if __name__ == "__main__":
    main()
