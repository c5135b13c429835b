"""`tokenyard serve --processes N`: N server processes on one port (uvicorn
`--workers`-style), each with its own models and engines.

Each child binds the port with SO_REUSEPORT, so the kernel spreads connections over
them; they share nothing but the sealing key (handed down by the parent), which is
all exact replay needs (apis/replay_state.py). Children run in their own process
group: a Ctrl-C reaches the parent only, which passes each signal on once, so the
first stops every child gracefully and a second skips the wait, as with one process.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType

LISTEN_BACKLOG = 2048


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port) that sibling processes may bind too."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen(LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock


def port_is_free(host: str, port: int) -> bool:
    """Nothing listens on (host, port), a server sharing it by SO_REUSEPORT included
    (a plain bind fails next to one): children must not join another server's port."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError:
            return False
    return True


def serve_processes(count: int, host: str, port: int, serve_one: Callable[[list[socket.socket]], int]) -> int:
    """Fork `count` children that each run `serve_one` on their own socket bound to
    the port (run_serve checked it is free); wait for them all. The exit status is the
    worst of theirs."""
    children: list[int] = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            code = 1
            try:
                os.setpgid(0, 0)
                code = serve_one([reuse_port_socket(host, port)])
            except BaseException as error:  # a child must exit here, whatever happened
                print(f"tokenyard serve (process {os.getpid()}): {error}", file=sys.stderr, flush=True)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)

    def forward(sig: int, frame: FrameType | None) -> None:
        for child in children:
            try:
                os.kill(child, sig)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    worst = 0
    for child in children:
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except InterruptedError:
                continue
        worst = max(worst, os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    return worst
