"""seam: a client of Seam's store broker, seamd, in Python's standard library alone.

    import seam

    async with await seam.connect() as client:
        rows = await client.fetch("Timer", where="name BEGINSWITH[c] $p", parameters={"p": "te"}, sort="name")
        async with client.live("Session", where='state == "running"', sort="-startedAt") as view:
            async for rows in view:
                print([row["name"] for row in rows])

Written from Protocol/PROTOCOL.md alone: NUL-terminated JSON frames of varlink over a Unix
socket, with ids to hold many calls on one connection. See README.md beside this package.
"""

from .client import (
    DEFAULT_TIMEOUT,
    PROTOCOL_VERSION,
    Client,
    LiveView,
    Operation,
    Subscription,
    connect,
    default_socket_path,
    delete,
    insert,
    update,
)
from .errors import (
    BrokenConnection,
    ClientClosed,
    DiffError,
    Disconnected,
    Error,
    FrameError,
    ProtocolError,
    RequestTooLarge,
    SeamError,
    Timeout,
    Unreachable,
)
from .framing import MAX_REPLY_FRAME, MAX_REQUEST_FRAME, FrameDecoder, decode, encode, format_date, parse_date
from .live import LiveResult, Row, Update
from .stream import FrameStream

__version__ = "0.1.0"

__all__ = [
    "BrokenConnection",
    "Client",
    "ClientClosed",
    "DEFAULT_TIMEOUT",
    "DiffError",
    "Disconnected",
    "Error",
    "FrameDecoder",
    "FrameError",
    "FrameStream",
    "LiveResult",
    "LiveView",
    "MAX_REPLY_FRAME",
    "MAX_REQUEST_FRAME",
    "Operation",
    "PROTOCOL_VERSION",
    "ProtocolError",
    "RequestTooLarge",
    "Row",
    "SeamError",
    "Subscription",
    "Timeout",
    "Unreachable",
    "Update",
    "connect",
    "decode",
    "default_socket_path",
    "delete",
    "encode",
    "format_date",
    "insert",
    "parse_date",
    "update",
    "__version__",
]
