"""codexec's host for a bash session: serves its background processes while cells run.

Usage: bash_host.py PROGRAM [ARGS...]   (the bash driver, or pty_relay.py in front of it)

The bash driver reads its control channel only between cells, so it cannot start a process while
one runs. This host sits between the server and it: it takes the channel (fd 3), gives PROGRAM a
channel of its own on fd 3, passes `exec` frames on to it and its `ready`/`done` frames back, and
serves the `proc_*` frames itself with the Python driver's Processes (python_driver.py: each
process `bash -c command` in a process group of its own, output relayed as frames). stdin,
stdout and stderr are PROGRAM's; this host never reads stdin (a read of it is the code's wait for
input, which the server looks for). SIGINT, SIGTERM and SIGHUP are ignored here: where the sandbox
signals every process or the process group, PROGRAM gets them itself. When PROGRAM exits, the host
exits with its status.
"""

import _thread
import json
import os
import signal
import socket
import sys

import python_driver as driver


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


def read_raw(reader):
    """One frame as it came (the bash driver matches its exact bytes), or None at the end."""
    header = reader.readline()
    if not header:
        return None
    body = reader.read(int(header))
    return header + body if len(body) == int(header) else None


def write_raw(fd, data):
    with driver.WRITE_LOCK:
        while data:
            data = data[os.write(fd, data) :]


def from_server(reader, program_fd, processes, shell):
    """Frames from the server: exec on to the program as they came, proc_* served here."""
    while True:
        frame = read_raw(reader)
        if frame is None:
            break
        body = frame.split(b"\n", 1)[1]
        # The server writes compact JSON, type first: {"type":"proc_start",...}.
        if not body.startswith(b'{"type":"proc_'):
            write_raw(program_fd, frame)
            continue
        message = json.loads(body)
        if message.get("type") == "proc_start" and shell:
            try:  # where the shell is now (a cell's cd), as `cmd &` would start there
                processes.cwd = os.readlink(f"/proc/{shell[0]}/cwd")
            except OSError:
                pass
        processes.handle(message)
    try:
        os.close(program_fd)  # the server's end: the program sees its channel end too
    except OSError:
        pass


def main(argv):
    if not argv:
        sys.exit("usage: bash_host.py PROGRAM [ARGS...]")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    server_fd, server_reader = driver.open_control()
    ours, theirs = socket.socketpair()
    child = start(argv, theirs.fileno())
    theirs.close()
    program_fd = os.dup(ours.fileno())
    ours.close()
    program_reader = os.fdopen(os.dup(program_fd), "rb", buffering=65536)
    shell = []  # the shell's pid, from its ready frame
    processes = driver.Processes(server_fd)
    _thread.start_new_thread(from_server, (server_reader, program_fd, processes, shell))
    while True:  # the program's frames (ready, done) back to the server
        message = driver.read_frame(program_reader)
        if message is None:
            break
        if message.get("type") == "ready" and isinstance(message.get("pid"), int):
            shell.append(message["pid"])
        driver.write_frame(server_fd, message)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):  # die as it died
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


if __name__ == "__main__":
    main(sys.argv[1:])
