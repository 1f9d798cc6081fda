"""pytest plugin: the test process may only open connections to this machine.

Loaded for every test run (``-p _pytest_offline`` with ``pythonpath = ["tests"]`` in
pyproject's pytest options). Any ``connect`` to an address outside the loopback range (127.0.0.0/8, ::1)
or a Unix socket, and any name lookup of a host other than ``localhost``, raises
:class:`OutsideNetworkError`, so a test that would need the outside network fails loudly
instead of passing where a network happens to exist. Kernels started by papermill are
separate processes and are not covered; the book's own network check is the browser test.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

__all__ = ["OutsideNetworkError"]


class OutsideNetworkError(OSError):
    """A test tried to reach an address outside this machine."""


_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def _is_local(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host)
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def pytest_configure(config: Any) -> None:
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            raise OutsideNetworkError(f"test tried to connect to {address!r}: only 127.0.0.1 / ::1 are allowed")

    def connect(self: socket.socket, address: Any) -> Any:
        check(self, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        check(self, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local(host):
            raise OutsideNetworkError(f"test tried to resolve {host!r}: only localhost is allowed")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo
