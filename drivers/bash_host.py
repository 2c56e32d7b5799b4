"""codexec's host for a bash session: serves its background processes while cells run.

Usage: python3 -S bash_host.py PROGRAM [ARGS...]   (the bash driver, or pty_relay.py in front of it)

The bash driver reads its control channel only between cells, so it cannot start a process while
one runs. This host sits between the server and it: it takes the channel (fd 3), gives PROGRAM a
channel of its own on fd 3, passes every frame but `proc_*` on as it came (the driver matches
their exact bytes) and PROGRAM's frames back, and serves `proc_*` itself with the Python driver's
Processes (python_driver.py, imported at the first one: each process `bash -c command` in a process
group of its own, output relayed as frames). It starts in a few milliseconds: nothing but what
relaying needs is imported until then. stdin, stdout and stderr are PROGRAM's; the host never
reads stdin (a read of it is the code's wait for input, which the server looks for). SIGINT,
SIGTERM and SIGHUP are ignored here: where the sandbox signals every process or the process group,
PROGRAM gets them itself. When PROGRAM exits, the host exits as it did.
"""

import _socket
import _thread
import fcntl
import os
import signal
import sys

# One writer at a time on the server's channel (this relay and the process threads).
WRITE_LOCK = _thread.allocate_lock()


def read_raw(reader):
    """One frame as it came, or None at the channel's end."""
    header = reader.readline()
    if not header:
        return None
    body = reader.read(int(header))
    return header + body if len(body) == int(header) else None


def write_raw(fd, data):
    with WRITE_LOCK:
        while data:
            data = data[os.write(fd, data) :]


def shell_pid(frame):
    """The pid in the driver's ready frame ({"type":"ready","pid":N,...}), or None."""
    at = frame.find(b'"pid":')
    if at < 0:
        return None
    digits = frame[at + 6 :].lstrip()
    end = 0
    while end < len(digits) and digits[end : end + 1].isdigit():
        end += 1
    return int(digits[:end]) if end else None


class Host:
    def __init__(self, server_fd, program_fd):
        self.server_fd = server_fd
        self.program_fd = program_fd
        self.shell = None  # the shell's pid, from its ready frame
        self.processes = None

    def serve(self, body):
        if self.processes is None:  # the first process: the Python driver's code, now
            import json

            import python_driver

            python_driver.WRITE_LOCK = WRITE_LOCK  # its frames and ours, one at a time
            self.json = json
            self.processes = python_driver.Processes(self.server_fd)
        message = self.json.loads(body)
        if message.get("type") == "proc_start" and self.shell:
            try:  # where the shell is now (a cell's cd), as `cmd &` would start there
                self.processes.cwd = os.readlink(f"/proc/{self.shell}/cwd")
            except OSError:
                pass
        self.processes.handle(message)

    def from_server(self, reader):
        """Frames from the server: proc_* served here, the rest on to the program as they came."""
        while True:
            frame = read_raw(reader)
            if frame is None:
                break
            body = frame[frame.index(b"\n") + 1 :]
            # The server writes compact JSON, type first: {"type":"proc_start",...}.
            if body.startswith(b'{"type":"proc_'):
                self.serve(body)
            else:
                write_raw(self.program_fd, frame)
        try:
            os.close(self.program_fd)  # the server's end: the program sees its channel end too
        except OSError:
            pass


def start(program, channel):
    pid = os.fork()
    if pid != 0:
        return pid
    try:
        os.dup2(channel, 3, inheritable=True)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        os.execv(program[0], program)
    except BaseException as error:  # the child must never return into the host's code
        os.write(2, f"codexec bash host: cannot start {program[0]}: {error}\n".encode())
    os._exit(127)


def main(argv):
    if not argv:
        sys.exit("usage: bash_host.py PROGRAM [ARGS...]")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    server_fd = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(3)
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    child = start(argv, theirs.fileno())
    theirs.close()
    host = Host(server_fd, ours.detach())  # close-on-exec, as sockets are made
    server_reader = open(server_fd, "rb", buffering=65536, closefd=False)
    program_reader = open(os.dup(host.program_fd), "rb", buffering=65536)
    _thread.start_new_thread(host.from_server, (server_reader,))
    while True:  # the program's frames (ready, done) back to the server, as they came
        frame = read_raw(program_reader)
        if frame is None:
            break
        if host.shell is None and b'"ready"' in frame:
            host.shell = shell_pid(frame)
        write_raw(server_fd, frame)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):  # die as it died
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


if __name__ == "__main__":
    main(sys.argv[1:])
