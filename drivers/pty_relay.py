# codexec's pseudo-terminal for a bash session (start_session {pty: true}), run inside the sandbox
# so the terminal is the sandbox's own (a helper in the server would put it outside).
#
# Usage: pty_relay.py [--forward-signals] [--terminal-fds MASTER,SLAVE] -- PROGRAM [ARGS...]
# (--terminal-fds: a terminal handed over, where the sandbox lets this relay open none: landlock's.)
#
# Starts PROGRAM (the bash driver) in a session of its own with a new pty's slave as its
# controlling terminal on stdin, stdout and stderr; fd 3 (the control channel) passes through
# untouched. Relays this process's stdin to the master and the master to its stdout, so stdout and
# stderr arrive merged, as on a terminal. The terminal: no echo (input is not repeated in the
# output), no \n -> \r\n, 200x50, TERM=dumb (no colours or cursor codes in the output).
# CODEXEC_PTY=1 tells the driver its stdout and stderr are one stream (one end mark, not two).
#
# Signals: where the sandbox signals every process (namespace, landlock) the program gets its
# SIGINT itself, and this relay ignores it. Where it signals a process group (subprocess, docker:
# --forward-signals) the program, in its own session, is not in that group: the relay passes INT,
# TERM and HUP on to the terminal's foreground group. A sandbox that forbids setsid (landlock
# without cgroups) keeps the program in the relay's group: the terminal is then its stdio but not
# its controlling terminal. When the program exits, the relay exits with its status.
import errno
import fcntl
import os
import select
import signal
import struct
import sys
import termios

ROWS, COLS = 50, 200
CHUNK = 65536
RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def open_terminal(handed):
    # Handed over (landlock's sandbox opens none: the launcher did, before confining), or our own.
    master, slave = handed or os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~(termios.ONLCR | termios.OCRNL)  # oflag
    attrs[3] &= ~(termios.ECHO | termios.ECHOE | termios.ECHOK | termios.ECHONL)  # lflag
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    return master, slave


def start(program, slave, master):
    pid = os.fork()
    if pid != 0:
        return pid
    try:
        os.close(master)
        try:
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        except OSError:
            pass  # setsid refused (seccomp): the terminal stays stdio only
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        # Python ignores SIGPIPE, and an ignored signal stays ignored across exec (bash could not trap it).
        for sig in (*RELAYED, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        env = dict(os.environ, TERM="dumb", CODEXEC_PTY="1")
        os.execve(program[0], program, env)
    except BaseException as error:  # the child must never return into the relay's code
        os.write(2, f"codexec pty relay: cannot start {program[0]}: {error}\n".encode())
    os._exit(127)


def forwarder(started, master):
    def forward(sig, _frame):
        if not started:
            return  # not forked yet: the program will not start with it pending
        try:
            group = os.getpgid(started[0])
        except OSError:
            return
        if group == os.getpgrp():
            return  # no session of its own: it got the signal with ours
        targets = {group}
        try:
            targets.add(os.tcgetpgrp(master))  # a job the program put in the foreground
        except OSError:
            pass
        for target in targets:
            try:
                os.killpg(target, sig)
            except OSError:
                pass

    return forward


def write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def read_some(fd):
    """Bytes from `fd`; b'' at its end (EIO: a master whose slave is closed); None: none now."""
    try:
        return os.read(fd, CHUNK)
    except BlockingIOError:
        return None
    except OSError as error:
        if error.errno == errno.EIO:
            return b""
        raise


def relay(child, master, wake_r):
    os.set_blocking(master, False)
    readers = [master, 0, wake_r]
    pending = b""  # input the terminal has no room for yet
    status = None
    while status is None:
        writers = [master] if pending else []
        readable, writable, _ = select.select(readers, writers, [])
        if master in writable:
            try:
                pending = pending[os.write(master, pending) :]
            except BlockingIOError:
                pass
        if master in readable:
            data = read_some(master)
            if data:
                write_all(1, data)
            elif data == b"":
                readers.remove(master)
        if 0 in readable:
            try:
                data = os.read(0, CHUNK)
            except OSError:
                data = b""
            if data:
                pending += data
            else:
                readers.remove(0)  # no EOF on a terminal: code reading it waits, as at a prompt
        if wake_r in readable:
            while read_some(wake_r):
                pass
            done, raw = os.waitpid(child, os.WNOHANG)
            if done:
                status = raw
    # What the program wrote before it exited (a background job may keep the slave open: no EIO).
    if master in readers:
        while data := read_some(master):
            write_all(1, data)
    return status


def exit_as(status):
    sys.stdout.flush()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv):
    forward = argv[:1] == ["--forward-signals"]
    if forward:
        argv = argv[1:]
    handed = None
    if argv[:1] == ["--terminal-fds"] and len(argv) > 1:
        handed = tuple(int(fd) for fd in argv[1].split(","))
        argv = argv[2:]
    if argv[:1] != ["--"] or len(argv) < 2 or (handed and len(handed) != 2):
        sys.exit("usage: pty_relay.py [--forward-signals] [--terminal-fds MASTER,SLAVE] -- PROGRAM [ARGS...]")
    try:
        os.fstat(3)
        control = True
    except OSError:
        control = False
    master, slave = open_terminal(handed)
    # Handlers before the fork (the child resets them): no exit or signal may come unseen.
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    started = []
    handler = forwarder(started, master) if forward else signal.SIG_IGN
    for sig in RELAYED:
        signal.signal(sig, handler)
    started.append(start(argv[1:], slave, master))
    os.close(slave)
    if control:
        os.close(3)  # the control channel is the program's: its end must end with the program
    exit_as(relay(started[0], master, wake_r))


if __name__ == "__main__":
    main(sys.argv[1:])
