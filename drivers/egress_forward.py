# The egress forwarder of CODEXEC_NETWORK=allowlist (src/egress): the first program of a sandbox
# whose network namespace holds only loopback. It listens on 127.0.0.1:PORT (what the proxy
# variables name), leaves a process of its own behind that relays every connection there to the
# server's proxy on the Unix socket SOCKET (bound into the sandbox), and execs the program.
#
# The relay is a grandchild in a session of its own: the program keeps its pid (signals and exit
# status are its own), never reaps or waits for the relay (a shell's bare `wait` would hang), and
# an interrupt sent to the program's group leaves the network up. It holds none of the program's
# descriptors (its output pipes close when the program's last holder ends) and ends with the
# sandbox (its pid namespace, or the container's teardown). One thread, no imports beyond the
# standard library's smallest: every connection's bytes are buffered up to BUFFER per direction,
# then reading from its sender pauses.
#
# Usage: egress_forward.py SOCKET PORT PROGRAM [ARGS...]
#
# The other way, for a server a session started (start_process expose_port): listen on SOCKET,
# in the workspace the server reaches, and relay each connection to 127.0.0.1:PORT, the server
# in the sandbox's own loopback, in the foreground until its process group is killed.
#
# Usage: egress_forward.py --expose SOCKET PORT
import os
import selectors
import signal
import socket
import sys

BUFFER = 256 * 1024
CHUNK = 64 * 1024


class End:
    """One side of a relayed connection: its socket, what waits to be sent to it, its peer."""

    def __init__(self, sock):
        self.sock = sock
        self.out = bytearray()
        self.peer = None
        self.reading = True  # until its sender's EOF
        self.eof_sent = False
        self.closed = False


def events(end):
    mask = 0
    if end.reading and len(end.peer.out) < BUFFER:
        mask |= selectors.EVENT_READ
    if end.out:
        mask |= selectors.EVENT_WRITE
    return mask


def update(selector, end):
    if end.closed:
        return
    mask = events(end)
    key = selector.get_map().get(end.sock)
    if mask and key is None:
        selector.register(end.sock, mask, end)
    elif mask and key.events != mask:
        selector.modify(end.sock, mask, end)
    elif not mask and key is not None:
        selector.unregister(end.sock)
    # Its peer stopped reading and everything it sent is out: pass the end of stream on.
    if not end.peer.reading and not end.out and not end.eof_sent:
        end.eof_sent = True
        try:
            end.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    if end.eof_sent and end.peer.eof_sent:
        close(selector, end)


def close(selector, end):
    for side in (end, end.peer):
        if side.closed:
            continue
        side.closed = True
        if selector.get_map().get(side.sock) is not None:
            selector.unregister(side.sock)
        side.sock.close()


def accept(selector, listener, dial):
    try:
        client, _ = listener.accept()
    except OSError:
        return
    try:
        upstream = dial()
    except OSError:
        client.close()
        return
    client.setblocking(False)
    upstream.setblocking(False)
    a, b = End(client), End(upstream)
    a.peer, b.peer = b, a
    update(selector, a)
    update(selector, b)


def step(selector, end, mask):
    if end.closed:
        return
    if mask & selectors.EVENT_READ:
        try:
            data = end.sock.recv(CHUNK)
        except BlockingIOError:
            data = None
        except OSError:
            close(selector, end)
            return
        if data == b"":
            end.reading = False
        elif data:
            if not relay_now(selector, end, data):
                return
    if mask & selectors.EVENT_WRITE and end.out:
        try:
            sent = end.sock.send(end.out)
            del end.out[:sent]
        except BlockingIOError:
            pass
        except OSError:
            close(selector, end)
            return
    update(selector, end)
    update(selector, end.peer)


def relay_now(selector, end, data):
    """`data` from `end` to its peer: sent at once when nothing waits before it (no select round
    between a read and its write), the rest buffered. False when the peer failed (both closed)."""
    peer = end.peer
    if not peer.out:
        try:
            sent = peer.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            close(selector, end)
            return False
        if sent == len(data):
            return True
        data = memoryview(data)[sent:]
    peer.out += data
    return True


def connected(family, address):
    """A dial: a new socket of `family` connected to `address` (closed when that fails)."""

    def dial():
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        return sock

    return dial


def relay(listener, dial):
    selector = selectors.DefaultSelector()
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        for key, mask in selector.select():
            if key.data is None:
                accept(selector, listener, dial)
            else:
                step(selector, key.data, mask)


def detach(keep):
    """The relay's own descriptors: the listener, and /dev/null for stdio."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)


def expose(path, port):
    """The other way (start_process expose_port): SOCKET, in the workspace, to 127.0.0.1:PORT, in
    the foreground of a background process of its session, which ends it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(128)
    relay(listener, connected(socket.AF_INET, ("127.0.0.1", port)))


def main():
    if sys.argv[1] == "--expose":
        expose(sys.argv[2], int(sys.argv[3]))
        return
    path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    child = os.fork()
    if child == 0:
        if os.fork() != 0:
            os._exit(0)
        os.setsid()
        for number in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(number, signal.SIG_IGN)
        detach(listener.fileno())
        try:
            relay(listener, connected(socket.AF_UNIX, path))
        finally:
            os._exit(0)
    listener.close()
    os.waitpid(child, 0)
    os.execv(argv[0], argv)


main()
