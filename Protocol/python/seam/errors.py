"""What the library raises.

Everything derives from :class:`Error`. A varlink error reply is a :class:`SeamError`; a
connection that is gone (or was never there) is a :class:`Disconnected`; a peer that breaks
the protocol is a :class:`ProtocolError` (and, when the connection had to be dropped for it,
a :class:`BrokenConnection`, which is both).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "Error",
    "SeamError",
    "Disconnected",
    "Unreachable",
    "ClientClosed",
    "ProtocolError",
    "BrokenConnection",
    "FrameError",
    "DiffError",
    "Timeout",
    "RequestTooLarge",
]


class Error(Exception):
    """The base of every error this library raises."""


class SeamError(Error):
    """An error reply: ``name`` is the fully qualified varlink error
    (``org.seam.Store.NotFound``), ``parameters`` its parameters (an empty dict when the reply
    had none, or something other than an object: then ``reply`` still holds it all)."""

    name: str
    parameters: dict[str, Any]
    reply: dict[str, Any]

    def __init__(self, name: str, parameters: Mapping[str, Any] | None = None, reply: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.parameters = dict(parameters) if parameters is not None else {}
        self.reply = dict(reply) if reply is not None else {"error": name, "parameters": self.parameters}
        super().__init__(self._describe())

    @property
    def short_name(self) -> str:
        """The error's member name alone: ``NotFound`` for ``org.seam.Store.NotFound``."""
        return self.name.rsplit(".", 1)[-1]

    @property
    def interface(self) -> str:
        """The interface that defines the error: ``org.seam.Store`` for ``org.seam.Store.NotFound``."""
        return self.name.rpartition(".")[0]

    @property
    def message(self) -> str | None:
        """The ``message`` parameter, when the error has one that is text."""
        message = self.parameters.get("message")
        return message if isinstance(message, str) else None

    def _describe(self) -> str:
        text = self.name or "(an error reply without a name)"
        message = self.message
        if message:
            text += f": {message}"
        others = {k: v for k, v in self.parameters.items() if not (k == "message" and message is not None)}
        if others:
            shown = ", ".join(f"{k}={_show(v)}" for k, v in others.items())
            text += f" ({shown})"
        raw = self.reply.get("parameters")
        if raw is not None and not isinstance(raw, dict):
            text += f" (parameters that are not an object: {_show(raw)})"
        return text


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


class Disconnected(Error):
    """The connection to seamd was lost with the call in flight, or there is none to be had.

    A client that may reconnect does so before its next call. ``address`` names where it was
    connected (a socket path, or ``fd N``)."""

    address: str | None

    def __init__(self, message: str, address: str | None = None) -> None:
        super().__init__(message)
        self.address = address


class Unreachable(Disconnected):
    """No connection could be made: nobody answers on the socket, or the descriptor handed over
    (``SEAM_FD``) is not a usable socket, or it was already taken, or closed and cannot be
    reopened. ``os_error`` is the system's reason, when there was one."""

    os_error: OSError | None

    def __init__(self, message: str, address: str | None = None, os_error: OSError | None = None) -> None:
        super().__init__(message, address)
        self.os_error = os_error

    @property
    def strerror(self) -> str | None:
        """The system's words for the reason (``No such file or directory``), if any."""
        if self.os_error is None:
            return None
        return self.os_error.strerror or str(self.os_error)


class ClientClosed(Disconnected):
    """The client was closed (``await client.close()``) before or during the call."""


class ProtocolError(Error):
    """The peer sent something the protocol does not allow: a frame that is not a JSON object,
    a reply of the wrong shape, a diff that does not fit the result it follows."""


class FrameError(ProtocolError):
    """A frame that cannot be read: not UTF-8, not JSON (or JSON with ``NaN`` or a number past a
    double's range), nested too deeply, or larger than the limit."""


class BrokenConnection(ProtocolError, Disconnected):
    """A frame could not be read (not UTF-8, not JSON, too large, cut short), so nothing after
    it could be trusted either: the connection was dropped, and the calls in flight fail with
    this. It is a :class:`Disconnected` too: a client that may reconnect does so next time."""


class DiffError(ProtocolError):
    """A subscription update that does not apply to the rows a :class:`~seam.LiveResult` holds
    (a diff with no result before it, an older sequence, an index out of range, a uuid that is
    not where the diff says). The rows are left as they were."""


class Timeout(Error, TimeoutError):
    """No reply came within the time allowed. The connection stays usable: a reply that comes
    later is dropped."""


class RequestTooLarge(Error, ValueError):
    """A call whose frame would be larger than the broker accepts (4 MiB): nothing was sent.
    Split the save, or page the query."""
