"""A bare frame connection: messages in and out as they are, no ids, no Hello.

What :class:`~seam.Client` does for you, undone: for replaying transcripts (the conformance
vectors), for plain varlink (replies in the order of the calls), and for looking at the wire.
"""

from __future__ import annotations

import asyncio
import os
import socket as _socket
from collections import deque
from types import TracebackType
from typing import Any

from .errors import BrokenConnection, Disconnected, FrameError, Timeout, Unreachable
from .framing import MAX_REPLY_FRAME, FrameDecoder, encode

__all__ = ["FrameStream"]


class FrameStream:
    """One connection to seamd that sends and receives whole frames.

    ``await FrameStream.open(path)`` (or ``fd=``); ``await send(message)`` writes one JSON
    frame, ``await send_raw(data)`` writes bytes as they are followed by a NUL (a frame that
    is not JSON, say), and ``await receive()`` reads the next message, or ``None`` once the
    broker has closed the connection.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str,
                 max_frame: int = MAX_REPLY_FRAME) -> None:
        self.address = address
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(max_frame)
        self._ready: deque[Any] = deque()
        self._eof = False
        self._broken: BrokenConnection | None = None

    @classmethod
    async def open(cls, path: str | os.PathLike[str] | None = None, *, fd: int | None = None,
                   max_frame: int = MAX_REPLY_FRAME) -> FrameStream:
        if fd is not None:
            try:
                sock = _socket.socket(fileno=fd)
                reader, writer = await asyncio.open_unix_connection(sock=sock)
            except OSError as e:
                raise Unreachable(f"fd {fd} is not a usable socket ({e.strerror or e})", f"fd {fd}", e) from None
            return cls(reader, writer, f"fd {fd}", max_frame)
        if path is None:
            raise ValueError("FrameStream.open needs a path or an fd")
        where = os.fspath(path)
        try:
            reader, writer = await asyncio.open_unix_connection(where)
        except OSError as e:
            raise Unreachable(f"no seamd answers on {where} ({e.strerror or e})", where, e) from None
        return cls(reader, writer, where, max_frame)

    async def send(self, message: Any) -> None:
        """Writes ``message`` as one frame (no size limit here: the broker's is 4 MiB)."""
        await self.send_raw(encode(message, limit=None)[:-1])

    async def send_raw(self, data: bytes) -> None:
        """Writes ``data`` and a NUL, whatever ``data`` is."""
        try:
            self._writer.write(data + b"\0")
            await self._writer.drain()
        except OSError as e:
            raise Disconnected(f"lost the connection to seamd ({self.address}): {e}", self.address) from None

    async def receive(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message (a JSON object), or ``None`` when the connection has closed.
        :class:`~seam.Timeout` when nothing comes within ``timeout`` seconds;
        :class:`~seam.BrokenConnection` for a frame that cannot be read or one cut short."""
        try:
            return await asyncio.wait_for(self._next(), timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"no frame from seamd ({self.address}) within {timeout} s") from None

    async def _next(self) -> dict[str, Any] | None:
        while not self._ready:
            if self._broken is not None:
                raise self._broken
            if self._eof:
                return None
            try:
                chunk = await self._reader.read(1 << 20)
            except OSError as e:
                raise Disconnected(f"lost the connection to seamd ({self.address}): {e}", self.address) from None
            if not chunk:
                self._eof = True
                if self._decoder.pending:
                    raise BrokenConnection(f"the connection closed in the middle of a frame "
                                           f"({self._decoder.pending} bytes without their NUL)", self.address)
                return None
            try:
                for message in self._decoder.feed(chunk):
                    self._ready.append(message)
            except FrameError as e:
                self._broken = BrokenConnection(f"seamd ({self.address}) sent {e}", self.address)
            if self._broken is not None and not self._ready:
                raise self._broken
        message = self._ready.popleft()
        if not isinstance(message, dict):
            raise BrokenConnection(f"seamd ({self.address}) sent a frame that is not a JSON object: {message!r}", self.address)
        return message

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

    async def __aenter__(self) -> FrameStream:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()
