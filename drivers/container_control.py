# Container mode's launcher (src/sandbox/container/control.ts): connects to the server's control
# socket, tells it the container's cgroups (one line: /proc/self/cgroup, lines joined by ";"), so
# the server can read which limit a run hit before the container exits; then makes the connection
# fd 3 (as a driver started by the other backends has it) and becomes the driver:
# container_control.py SOCKET PROGRAM [ARGS...].
import os
import socket
import sys

connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(sys.argv[1])
try:
    with open("/proc/self/cgroup", "rb") as cgroups:
        header = cgroups.read().strip().replace(b"\n", b";")
except OSError:
    header = b""
connection.sendall(header + b"\n")
if connection.fileno() != 3:
    os.dup2(connection.fileno(), 3)
os.set_inheritable(3, True)  # sockets are close-on-exec; fd 3 must reach the driver
os.execv(sys.argv[2], sys.argv[2:])
