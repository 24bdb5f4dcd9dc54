"""Frames: each message is one JSON object (UTF-8) followed by a NUL byte (PROTOCOL.md, "Framing").

:func:`encode` makes the bytes of one frame (NUL included); :class:`FrameDecoder` splits a
byte stream into decoded messages, however reads split it.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Iterator
from typing import Any

from .errors import FrameError, RequestTooLarge

__all__ = ["MAX_REQUEST_FRAME", "MAX_REPLY_FRAME", "encode", "decode", "FrameDecoder", "format_date", "parse_date"]

#: The largest frame the broker reads (without its NUL); a larger one closes the connection.
MAX_REQUEST_FRAME = 4 * 1024 * 1024
#: The largest reply frame a client should accept (replies carry results).
MAX_REPLY_FRAME = 512 * 1024 * 1024


def format_date(moment: datetime.datetime) -> str:
    """A timezone-aware datetime as the protocol writes dates: RFC 3339 in UTC with six
    fraction digits (``2026-11-30T22:16:10.250000Z``)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a date must be timezone-aware (datetime.timezone.utc, say): a naive one names no moment")
    utc = moment.astimezone(datetime.timezone.utc)
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
            f".{utc.microsecond:06d}Z")


def parse_date(text: str) -> datetime.datetime:
    """A date as the broker sends it (RFC 3339, UTC, with a fraction) as an aware datetime."""
    value = text.strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    if len(value) > 10 and value[10] in "t ":
        value = value[:10] + "T" + value[11:]
    moment = datetime.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment.astimezone(datetime.timezone.utc)


def _default(value: Any) -> Any:
    """What json cannot write by itself: dates (RFC 3339), bytes (base64), sets and tuples."""
    if isinstance(value, datetime.datetime):
        return format_date(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} cannot be sent as JSON: {value!r}")


def encode(message: Any, *, limit: int | None = MAX_REQUEST_FRAME) -> bytes:
    """One frame: ``message`` as compact JSON in UTF-8, then NUL.

    Refuses what the broker would refuse before anything is sent: ``NaN`` and infinities
    (``ValueError``), text that is not Unicode (a lone surrogate: ``ValueError``), and a frame
    over ``limit`` bytes (:class:`~seam.RequestTooLarge`). JSON escapes U+0000, so the frame
    itself never holds a NUL.
    """
    try:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_default)
    except ValueError as e:
        raise ValueError(f"cannot be sent as JSON: {e}") from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"text that is not valid Unicode cannot be sent: {e.reason} at {e.start}") from None
    if limit is not None and len(data) > limit:
        raise RequestTooLarge(f"a call of {len(data)} bytes: the broker reads frames of at most {limit} bytes "
                              "(split the save, or page the query)")
    return data + b"\0"


def _refuse_constant(name: str) -> Any:
    raise FrameError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise FrameError(f"the number {text} is too large for a double")
    return value


def decode(frame: bytes | bytearray | memoryview) -> Any:
    """One frame's bytes (without its NUL) as a JSON value; :class:`~seam.FrameError` when it
    is not UTF-8, not JSON, or nested too deeply to read."""
    try:
        text = bytes(frame).decode("utf-8")
    except UnicodeDecodeError as e:
        raise FrameError(f"a frame that is not UTF-8 (byte {e.start})") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except FrameError:
        raise
    except RecursionError:
        raise FrameError("a frame nested too deeply to read") from None
    except ValueError as e:
        raise FrameError(f"a frame that is not JSON ({e}): {_excerpt(text)}") from None


def _excerpt(text: str, size: int = 80) -> str:
    shown = text if len(text) <= size else text[:size] + "…"
    return json.dumps(shown, ensure_ascii=False)


class FrameDecoder:
    """Splits a byte stream into frames at their NULs and decodes each.

    ``feed(data)`` takes the next bytes read and returns an iterator over the messages they
    complete, in order; it raises :class:`~seam.FrameError` at a frame that cannot be read (the
    ones before it are yielded first) or as soon as an unfinished frame grows past
    ``max_frame`` bytes. Each byte is searched for a NUL once, so a large frame costs its length.
    """

    def __init__(self, max_frame: int = MAX_REPLY_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._start = 0  # where the next frame begins
        self._scanned = 0  # where the search for its NUL goes on

    @property
    def pending(self) -> int:
        """Bytes of a frame not finished yet (read, but without their NUL so far)."""
        return len(self._buffer) - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[Any]:
        self._buffer += data
        return self._frames()

    def _frames(self) -> Iterator[Any]:
        while True:
            end = self._buffer.find(b"\0", max(self._start, self._scanned))
            if end < 0:
                self._scanned = len(self._buffer)
                if self._start > 0 and (self._start == len(self._buffer) or self._start > 65536):
                    del self._buffer[: self._start]
                    self._scanned -= self._start
                    self._start = 0
                if self.pending > self.max_frame:
                    raise FrameError(f"a frame larger than {self.max_frame} bytes (its NUL not found after {self.pending} bytes)")
                return
            if end - self._start > self.max_frame:
                raise FrameError(f"a frame of {end - self._start} bytes, larger than {self.max_frame}")
            frame = memoryview(self._buffer)[self._start:end]
            try:
                message = decode(frame)
            finally:
                frame.release()
            self._start = end + 1
            self._scanned = self._start
            yield message
