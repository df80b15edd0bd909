"""Messages between the pytest process, the fork server and its workers: length-prefixed JSON.

Only small JSON control messages travel on the sockets (job descriptions, verdicts, file names);
arrays go through raw files (see ``transfer``), so nothing is pickled and a 0.5 GB output never
passes through a pipe. File descriptors (a new worker's socket) travel with SCM_RIGHTS.
"""
from __future__ import annotations

import socket
import struct
from typing import Any, Optional

from accel_regress.util import strict_json

_HEADER = struct.Struct("!I")
MAX_MESSAGE = 64 << 20   # a control message is small; a bigger length means a torn stream


class ChannelClosed(EOFError):
    """The other end closed its socket (it exited or died)."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ChannelClosed("peer closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def send(sock: socket.socket, message: dict, fds: Optional[list[int]] = None) -> None:
    body = strict_json.dumps(message).encode()
    data = _HEADER.pack(len(body)) + body
    if fds:
        # The descriptors ride on the first byte; the rest follows as plain stream data.
        socket.send_fds(sock, [data[:1]], fds)
        data = data[1:]
    sock.sendall(data)


def recv(sock: socket.socket, with_fds: bool = False) -> Any:
    fds: list[int] = []
    if with_fds:
        first, fds, _flags, _addr = socket.recv_fds(sock, 1, 4)
        if not first:
            raise ChannelClosed("peer closed the channel")
        head = first + _recv_exact(sock, _HEADER.size - 1)
    else:
        head = _recv_exact(sock, _HEADER.size)
    (length,) = _HEADER.unpack(head)
    if length > MAX_MESSAGE:
        raise ChannelClosed(f"message of {length} bytes: the stream is torn")
    message = strict_json.loads(_recv_exact(sock, length))
    return (message, fds) if with_fds else message
