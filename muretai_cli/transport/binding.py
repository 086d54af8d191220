"""Listening sockets for a server: ``bind`` one, ``bind_each`` one per worker on one port
(SO_REUSEPORT), and ``listening``, the one a server starts with, whose failure says what
to do. Plain sockets only: binding never imports uvicorn."""

from __future__ import annotations

import errno
import socket

from muretai_cli.errors import InputError


def bind(host: str, port: int, *, shared: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when the host has a colon): connections
    queue from the moment it returns, so a server may say where it listens before it runs.
    ``shared``: one of several on the port (SO_REUSEPORT, see ``bind_each``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named, so asyncio turns Nagle off on accepted sockets (a reply is two writes)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)  # uvicorn's backlog; its create_server listens again, harmlessly
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def listening(host: str, port: int, count: int) -> list[socket.socket]:
    """``bind_each``, its failure an ``InputError('cannot-bind')`` saying what to do."""
    try:
        return bind_each(host, port, count)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            hint = (f"another process listens on {host}:{port} (a `muretai serve` or `relay "
                    "serve` still running?): stop it, or give another port with --port N "
                    "(--port 0 picks a free one)")
        elif exc.errno == errno.EACCES:
            hint = ("a port below 1024 needs privileges: give --port N with N of 1024 or "
                    "more, and put a reverse proxy in front")
        elif exc.errno == errno.EADDRNOTAVAIL:
            hint = f"{host} is not an address of this machine: give --host 127.0.0.1"
        else:
            hint = None
        raise InputError("cannot-bind", f"cannot listen on {host}:{port}: {exc.strerror}",
                         hint=hint) from None


def bind_each(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` listening sockets on one port, one per worker process (SO_REUSEPORT): the
    kernel spreads new connections over their queues by a hash of each connection's
    addresses. One socket shared by every worker would not: the worker that wakes first
    takes every connection waiting, so keep-alive clients that connect together all land
    on one process. Port 0: the first socket picks the port, the others join it. One
    (a single process): a plain socket, which no other process can join."""
    if count <= 1:
        return [bind(host, port)]
    first = bind(host, port, shared=True)
    socks = [first]
    try:
        for _ in range(count - 1):
            socks.append(bind(host, first.getsockname()[1], shared=True))
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks
