"""Connections to seamd: the handshake, calls, subscriptions and reconnects.

One :class:`Client` holds one connection at a time and multiplexes every call on it by id
(PROTOCOL.md, "Calls and replies"). When the connection is lost, the calls in flight raise
:class:`~seam.Disconnected`; the next call connects again (and says ``Hello`` again), and each
open :class:`Subscription` subscribes again with ``since`` its last sequence, so that its
iterator goes on with a ``diff`` or a ``resync``.
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import itertools
import logging
import os
import socket as _socket
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Protocol

from .errors import (
    BrokenConnection,
    ClientClosed,
    Disconnected,
    Error,
    FrameError,
    ProtocolError,
    SeamError,
    Timeout,
    Unreachable,
)
from .framing import MAX_REPLY_FRAME, FrameDecoder, encode
from .live import LiveResult, Row, Update

__all__ = [
    "PROTOCOL_VERSION",
    "Client",
    "Subscription",
    "LiveView",
    "Operation",
    "connect",
    "insert",
    "update",
    "delete",
    "default_socket_path",
]

log = logging.getLogger("seam")

#: The protocol version this library speaks (sent in ``Hello``).
PROTOCOL_VERSION = 1

SHUTTING_DOWN = "org.seam.Store.ShuttingDown"
SEQUENCE_AHEAD = "org.seam.Store.SequenceAhead"


class _Default(enum.Enum):
    TIMEOUT = "the client's timeout"


#: Stands for "the timeout given to :func:`connect`" in a call's ``timeout``.
DEFAULT_TIMEOUT = _Default.TIMEOUT
TimeoutArg = float | None | _Default


def default_socket_path() -> str:
    """Where seamd listens when nothing says otherwise: ``$XDG_RUNTIME_DIR/seam/seamd.sock``,
    else ``/tmp/seam-$UID/seamd.sock`` (``$SEAM_SOCKET`` is looked at before this)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "seam", "seamd.sock")
    return f"/tmp/seam-{os.getuid()}/seamd.sock"


# The inherited socket has one client per process: the first connect() without a socket
# takes it, the later ones connect to SEAM_SOCKET (PROTOCOL.md, "Connecting").
_inherited_taken = False


@dataclass(frozen=True)
class _Address:
    path: str | None = None
    fd: int | None = None

    def __str__(self) -> str:
        return self.path if self.path is not None else f"fd {self.fd}"


def _resolve(socket: str | os.PathLike[str] | None, fd: int | None) -> _Address:
    global _inherited_taken
    if socket is not None:
        return _Address(path=os.fspath(socket))
    if fd is not None:
        return _Address(fd=fd)
    inherited = os.environ.get("SEAM_FD")
    if inherited and not _inherited_taken:
        _inherited_taken = True
        try:
            number = int(inherited)
        except ValueError:
            raise Unreachable(f"SEAM_FD={inherited!r} is not a file descriptor number", f"fd {inherited}") from None
        return _Address(fd=number)
    return _Address(path=os.environ.get("SEAM_SOCKET") or default_socket_path())


# --- operations for save() ---------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One change for :meth:`Client.save`: made by :func:`insert`, :func:`update`, :func:`delete`."""

    kind: Literal["insert", "update", "delete"]
    entity: str
    uuid: str | None = None
    values: Mapping[str, Any] | None = None


def insert(entity: str, values: Mapping[str, Any]) -> Operation:
    """A new row of ``entity``; without a ``uuid`` among ``values`` the broker makes one (a
    time-ordered version 7 UUID), and attributes not given take their defaults."""
    return Operation("insert", entity, None, dict(values))


def update(entity: str, uuid: str, values: Mapping[str, Any]) -> Operation:
    """Changes the attributes given in ``values`` of the row ``uuid``; the others stay."""
    return Operation("update", entity, uuid, dict(values))


def delete(entity: str, uuid: str) -> Operation:
    """Deletes the row ``uuid`` (the link rules run: deleting a Timer deletes its Session)."""
    return Operation("delete", entity, uuid, None)


# --- what to do with each reply ------------------------------------------------------------


class _Handler(Protocol):
    def reply(self, message: dict[str, Any]) -> bool:
        """Takes a reply to its call; True when it was the last."""
        ...

    def lost(self, error: Disconnected) -> None:
        """The connection is gone with the call in flight."""
        ...


def _continues(message: Mapping[str, Any]) -> bool:
    return message.get("continues") is True


def _parameters(message: Mapping[str, Any], method: str) -> dict[str, Any]:
    """A reply's parameters; raises :class:`SeamError` for an error reply, and
    :class:`ProtocolError` for a reply of the wrong shape."""
    if "error" in message:
        name = message["error"]
        if not isinstance(name, str):
            raise ProtocolError(f"{method}: an error reply whose error is {name!r}, not a name")
        raw = message.get("parameters")
        raise SeamError(name, raw if isinstance(raw, dict) else None, message)
    parameters = message.get("parameters")
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ProtocolError(f"{method}: a reply whose parameters are not an object: {parameters!r}")
    return parameters


class _Single:
    """A call with one reply."""

    def __init__(self, future: asyncio.Future[dict[str, Any]]) -> None:
        self.future = future

    def reply(self, message: dict[str, Any]) -> bool:
        if not self.future.done():
            self.future.set_result(message)
        return True

    def lost(self, error: Disconnected) -> None:
        if not self.future.done():
            self.future.set_exception(error)


class _Stream:
    """A call with ``more``: each reply is queued until the last."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any] | Disconnected] = asyncio.Queue()

    def reply(self, message: dict[str, Any]) -> bool:
        self.queue.put_nowait(message)
        return not _continues(message) or "error" in message

    def lost(self, error: Disconnected) -> None:
        self.queue.put_nowait(error)


# --- one connection -------------------------------------------------------------------------


class _Link(asyncio.Protocol):
    """One connection: frames in and out, and the calls waiting on it by id."""

    def __init__(self, address: _Address, max_frame: int) -> None:
        self.address = address
        self.decoder = FrameDecoder(max_frame)
        self.handlers: dict[int, _Handler] = {}
        self.transport: asyncio.Transport | None = None
        self.error: Disconnected | None = None  # set once the connection is gone
        self.closing = False  # seamd said it shuts down: no new calls go here
        self._paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.error is not None:
            return
        try:
            for message in self.decoder.feed(data):
                self._dispatch(message)
                if self.error is not None:
                    return
        except FrameError as e:
            self.abort(BrokenConnection(f"seamd ({self.address}) sent {e}; the connection was dropped", str(self.address)))

    def eof_received(self) -> bool:
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if self.error is None:
            if self.decoder.pending:
                why = f"the connection closed in the middle of a frame ({self.decoder.pending} bytes without their NUL)"
            elif exc is not None:
                why = f"the connection failed ({exc})"
            elif self.closing:
                why = "seamd shut down"
            else:
                why = "seamd closed the connection"
            error: Disconnected
            if self.decoder.pending:
                error = BrokenConnection(f"lost the connection to seamd ({self.address}): {why}", str(self.address))
            else:
                error = Disconnected(f"lost the connection to seamd ({self.address}): {why}", str(self.address))
            self.abort(error)
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # what the client uses

    @property
    def usable(self) -> bool:
        return self.error is None and not self.closing

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            raise FrameError(f"a frame that is not a JSON object ({type(message).__name__})")
        key = message.get("id")
        number = key if isinstance(key, int) and not isinstance(key, bool) else -1
        handler = self.handlers.get(number)
        if message.get("error") == SHUTTING_DOWN:
            self.closing = True
        if handler is None:
            if message.get("error") != SHUTTING_DOWN:
                log.debug("seam: a frame for no call in flight: %r", message)
            return
        if handler.reply(message):
            self.handlers.pop(number, None)

    def write(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        assert self.transport is not None
        self.transport.write(data)

    async def drain(self) -> None:
        if self.error is not None:
            raise self.error
        if self._paused:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def abort(self, error: Disconnected, *, flush: bool = False) -> None:
        """Ends the connection: every call in flight gets ``error``."""
        if self.error is not None:
            return
        self.error = error
        self.closing = True
        handlers, self.handlers = self.handlers, {}
        for handler in handlers.values():
            handler.lost(error)
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(error)
                waiter.exception()  # retrieved: nobody else may be waiting on it
        if self.transport is not None:
            if flush:
                self.transport.close()
            else:
                self.transport.abort()
        elif not self.closed.done():
            self.closed.set_result(None)


# --- the client ---------------------------------------------------------------------------


def _query_parameters(parameters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A predicate's parameters as the broker takes them: dates as Unix seconds."""
    if parameters is None:
        return None
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, datetime.datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                raise ValueError(f"parameter {key!r}: a date must be timezone-aware")
            value = value.timestamp()
        out[key] = value
    return out


def _fields(fields: Sequence[str] | str | None) -> list[str] | None:
    if fields is None:
        return None
    if isinstance(fields, str):
        return [f.strip() for f in fields.split(",") if f.strip()]
    return list(fields)


def _query(entity: str, where: str | None, parameters: Mapping[str, Any] | None, sort: str | None,
           limit: int | None, offset: int | None, fields: Sequence[str] | str | None) -> dict[str, Any]:
    query: dict[str, Any] = {"entity": entity}
    if where is not None:
        query["predicate"] = where
    converted = _query_parameters(parameters)
    if converted is not None:
        query["parameters"] = converted
    if sort is not None:
        query["sort"] = sort
    if limit is not None:
        query["limit"] = limit
    if offset is not None:
        query["offset"] = offset
    selected = _fields(fields)
    if selected is not None:
        query["fields"] = selected
    return query


class Client:
    """A connection to seamd that says ``Hello`` first and again after each reconnect.

    Made by :func:`connect`. ``hello`` is the broker's reply to the last ``Hello`` (``version``,
    ``role``, ``author``, ``product``, ``sequence``); ``address`` says where it connects.
    """

    def __init__(self, address: _Address, *, role: str | None, name: str | None,
                 capabilities: Mapping[str, Sequence[str]] | None, timeout: float | None,
                 reconnect: bool, reconnect_timeout: float | None, max_frame: int) -> None:
        self._address = address
        self._hello_parameters: dict[str, Any] = {"version": PROTOCOL_VERSION}
        if role is not None:
            self._hello_parameters["role"] = role
        if name is not None:
            self._hello_parameters["name"] = name
        if capabilities is not None:
            self._hello_parameters["capabilities"] = {k: list(v) for k, v in capabilities.items()}
        self.timeout = timeout
        self.reconnect = reconnect and address.path is not None
        self.reconnect_timeout = reconnect_timeout
        self.max_frame = max_frame
        self.hello: dict[str, Any] = {}
        self.connections = 0  # how many connections this client has made
        self._link: _Link | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._subscriptions: dict[Subscription, None] = {}  # in the order they were made
        self._closed = False

    @property
    def address(self) -> str:
        """The socket's path, or ``fd N`` for a descriptor handed over."""
        return str(self._address)

    @property
    def connected(self) -> bool:
        """Whether a connection is open now (a call would not need to connect first)."""
        return self._link is not None and self._link.usable

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self.connected else "disconnected"
        return f"<seam.Client {self.address} {state}>"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()

    # connecting

    def _next_id(self) -> int:
        return next(self._ids)

    def _timeout(self, timeout: TimeoutArg) -> float | None:
        return self.timeout if isinstance(timeout, _Default) else timeout

    async def _open(self) -> _Link:
        loop = asyncio.get_running_loop()
        address = self._address
        link = _Link(address, self.max_frame)
        if address.fd is not None:
            if self.connections:
                raise Unreachable(f"the socket seamd handed over ({address}) is closed and cannot be reopened: "
                                  "a process seamd starts exits then, and seamd starts it again", str(address))
            self.connections += 1
            try:
                sock = _socket.socket(fileno=address.fd)
            except OSError as e:
                raise Unreachable(f"{address} is not a socket seamd handed over ({e.strerror or e})", str(address), e) from None
            if sock.type != _socket.SOCK_STREAM:
                sock.detach()
                raise Unreachable(f"{address} is not a stream socket", str(address))
            os.set_inheritable(sock.fileno(), False)  # one client per stream: not the children's
            try:
                await loop.create_unix_connection(lambda: link, sock=sock)
            except (OSError, ValueError) as e:  # ValueError: not a Unix stream socket
                sock.close()
                raise Unreachable(f"cannot use {address} ({getattr(e, 'strerror', None) or e})", str(address),
                                  e if isinstance(e, OSError) else None) from None
        else:
            assert address.path is not None
            try:
                await loop.create_unix_connection(lambda: link, address.path)
            except OSError as e:
                raise Unreachable(f"no seamd answers on {address.path} ({e.strerror or e})", address.path, e) from None
            self.connections += 1
        try:
            self.hello = await self._request(link, "org.seam.Store.Hello", self._hello_parameters, self.timeout)
        except BaseException:
            link.abort(Disconnected(f"Hello failed on {address}", str(address)))
            raise
        return link

    async def _ensure_link(self) -> _Link:
        """The open connection, after connecting again if it was lost; each subscription that
        is not on it subscribes again on it."""
        if self._closed:
            raise ClientClosed("the client is closed", self.address)
        link = self._link
        if link is None or not link.usable:
            async with self._lock:
                if self._closed:
                    raise ClientClosed("the client is closed", self.address)
                link = self._link
                if link is None or not link.usable:
                    if link is not None:
                        link.abort(link.error or Disconnected(f"seamd ({self.address}) is shutting down", self.address))
                        if not self.reconnect:
                            raise self._no_reconnect(link.error)
                    try:
                        link = await asyncio.wait_for(self._open(), self.timeout)
                    except asyncio.TimeoutError:
                        raise Timeout(f"seamd ({self.address}) did not answer Hello within {self.timeout} s") from None
                    self._link = link
        for subscription in list(self._subscriptions):
            if subscription._link is None and not subscription._ended:
                subscription._start(link)
        return link

    def _no_reconnect(self, error: Disconnected | None) -> Disconnected:
        lost = str(error) if error is not None else f"lost the connection to seamd ({self.address})"
        if self._address.fd is not None:
            return Disconnected(f"{lost}; the socket seamd handed over cannot be reopened (a process seamd starts "
                                "exits then, and seamd starts it again)", self.address)
        return Disconnected(f"{lost}; this client does not reconnect (connect(reconnect=False))", self.address)

    # calls

    async def _request(self, link: _Link, method: str, parameters: Mapping[str, Any] | None,
                       timeout: float | None) -> dict[str, Any]:
        message: dict[str, Any] = {"method": method}
        if parameters is not None:
            message["parameters"] = parameters
        key = self._next_id()
        message["id"] = key
        data = encode(message)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        link.write(data)
        link.handlers[key] = _Single(future)
        try:
            await link.drain()
            reply = await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"no reply to {method} from seamd ({link.address}) within {timeout} s") from None
        finally:
            link.handlers.pop(key, None)
        return _parameters(reply, method)

    async def call(self, method: str, parameters: Mapping[str, Any] | None = None, *,
                   timeout: TimeoutArg = DEFAULT_TIMEOUT, oneway: bool = False) -> dict[str, Any]:
        """Calls any method (``org.seam.Timers.Start``) and returns its reply's parameters.

        Raises :class:`SeamError` for an error reply, :class:`Disconnected` when the connection
        is lost with the call in flight (or cannot be made), :class:`Timeout` past ``timeout``
        seconds (the client's by default; ``None``: no limit). ``oneway`` sends the call with no
        reply asked for, and returns ``{}`` once it is written.
        """
        link = await self._ensure_link()
        if oneway:
            message: dict[str, Any] = {"method": method, "oneway": True}
            if parameters is not None:
                message["parameters"] = dict(parameters)
            link.write(encode(message))
            await link.drain()
            return {}
        return await self._request(link, method, parameters, self._timeout(timeout))

    async def call_more(self, method: str, parameters: Mapping[str, Any] | None = None, *,
                        timeout: float | None = None) -> AsyncIterator[dict[str, Any]]:
        """Calls a method with ``more`` and yields each reply's parameters, the last included
        (the one without ``continues``). ``timeout`` bounds the wait for each reply (none by
        default). It does not reconnect: a lost connection raises :class:`Disconnected`."""
        link = await self._ensure_link()
        key = self._next_id()
        message: dict[str, Any] = {"method": method, "more": True, "id": key}
        if parameters is not None:
            message["parameters"] = dict(parameters)
        data = encode(message)
        stream = _Stream()
        link.write(data)
        link.handlers[key] = stream
        try:
            await link.drain()
            while True:
                try:
                    item = await asyncio.wait_for(stream.queue.get(), timeout)
                except asyncio.TimeoutError:
                    raise Timeout(f"no reply to {method} from seamd ({link.address}) within {timeout} s") from None
                if isinstance(item, Disconnected):
                    raise item
                parameters_ = _parameters(item, method)
                last = not _continues(item)
                yield parameters_
                if last:
                    return
        finally:
            link.handlers.pop(key, None)

    async def fetch(self, entity: str, where: str | None = None, parameters: Mapping[str, Any] | None = None,
                    sort: str | None = None, limit: int | None = None, offset: int | None = None,
                    fields: Sequence[str] | str | None = None, *, uuid: str | None = None,
                    timeout: TimeoutArg = DEFAULT_TIMEOUT) -> list[Row]:
        """The rows of ``entity`` that match the predicate ``where`` (with ``$name`` values from
        ``parameters``), ordered by ``sort`` (``"name"``, ``"-startedAt,name[c]"``), paged by
        ``limit`` and ``offset``, with the attributes in ``fields`` (``uuid`` always); or, given
        ``uuid``, that one row (or none)."""
        query = _query(entity, where, parameters, sort, limit, offset, fields)
        if uuid is not None:
            query["uuid"] = uuid
        reply = await self.call("org.seam.Store.Fetch", query, timeout=timeout)
        rows = reply.get("rows")
        if not isinstance(rows, list):
            raise ProtocolError(f"org.seam.Store.Fetch: a reply without rows: {reply!r}")
        return rows

    async def count(self, entity: str, where: str | None = None, parameters: Mapping[str, Any] | None = None, *,
                    timeout: TimeoutArg = DEFAULT_TIMEOUT) -> int:
        """How many rows of ``entity`` match ``where``."""
        reply = await self.call("org.seam.Store.Count", _query(entity, where, parameters, None, None, None, None),
                                timeout=timeout)
        count = reply.get("count")
        if not isinstance(count, int) or isinstance(count, bool):
            raise ProtocolError(f"org.seam.Store.Count: a reply without a count: {reply!r}")
        return count

    async def save(self, operations: Iterable[Operation], *, unchanged_since: int | None = None,
                   count_only: bool = False, timeout: TimeoutArg = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Saves inserts, updates and deletes as one transaction (all or nothing). The broker
        applies the inserts first, then the updates, then the deletes, whatever their order
        here. Returns the reply (``sequence``: the save's number, ``None`` when nothing changed;
        ``changes``), with ``inserted`` added: the uuid of each insert, in the order given.
        With ``count_only``, the broker says how many changes there were (``changed``) instead
        of listing them, and there is no ``inserted``: for bulk loads that do not read the list."""
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        deletes: list[dict[str, Any]] = []
        for operation in operations:
            if not isinstance(operation, Operation):
                raise TypeError(f"save() takes seam.insert, seam.update and seam.delete, not {operation!r}")
            if operation.kind == "insert":
                inserts.append({"entity": operation.entity, "values": dict(operation.values or {})})
            elif operation.kind == "update":
                updates.append({"entity": operation.entity, "uuid": operation.uuid, "values": dict(operation.values or {})})
            else:
                deletes.append({"entity": operation.entity, "uuid": operation.uuid})
        parameters: dict[str, Any] = {}
        if inserts:
            parameters["inserts"] = inserts
        if updates:
            parameters["updates"] = updates
        if deletes:
            parameters["deletes"] = deletes
        if unchanged_since is not None:
            parameters["unchangedSince"] = unchanged_since
        if count_only:
            parameters["reply"] = "count"
        reply = await self.call("org.seam.Store.Save", parameters, timeout=timeout)
        if count_only:
            return reply
        given = [i["values"].get("uuid") for i in inserts]
        made = iter([c.get("uuid") for c in reply.get("changes") or [] if isinstance(c, dict)
                     and c.get("kind") == "insert" and c.get("uuid") not in given])
        reply["inserted"] = [u if isinstance(u, str) else next(made, None) for u in given]
        return reply

    async def status(self, *, timeout: TimeoutArg = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """``org.seam.Store.Status``: the broker, its stores, roles, plugins."""
        return await self.call("org.seam.Store.Status", timeout=timeout)

    async def schema(self, *, timeout: TimeoutArg = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
        """``org.seam.Store.Schema``: the models served, with their entities and attributes."""
        reply = await self.call("org.seam.Store.Schema", timeout=timeout)
        models = reply.get("models")
        return models if isinstance(models, list) else []

    # subscriptions

    def subscribe(self, entity: str, where: str | None = None, parameters: Mapping[str, Any] | None = None,
                  sort: str | None = None, limit: int | None = None, fields: Sequence[str] | str | None = None, *,
                  since: int | None = None) -> Subscription:
        """A live query: iterate it (``async for update in sub``) for its :class:`Update`\\ s.

        The Subscribe call is written at once when the client is connected (so it is handled
        before any call made after this), else when the iteration starts. ``since`` resumes from
        a sequence number received earlier (the first update is then a ``diff`` or a ``resync``).
        """
        if self._closed:
            raise ClientClosed("the client is closed", self.address)
        query = _query(entity, where, parameters, sort, limit, None, fields)
        encode({"parameters": query})  # what cannot be sent is refused here, not at a reconnect
        subscription = Subscription(self, query, since)
        self._subscriptions[subscription] = None
        link = self._link
        if link is not None and link.usable:
            subscription._start(link)
        return subscription

    def live(self, entity: str, where: str | None = None, parameters: Mapping[str, Any] | None = None,
             sort: str | None = None, limit: int | None = None, fields: Sequence[str] | str | None = None) -> LiveView:
        """A subscription and the :class:`LiveResult` it keeps: ``async with client.live(...) as
        view: async for rows in view: ...`` (the subscription ends with the block)."""
        return LiveView(self, dict(entity=entity, where=where, parameters=parameters, sort=sort, limit=limit, fields=fields))

    def _forget(self, subscription: Subscription) -> None:
        self._subscriptions.pop(subscription, None)

    # closing

    async def close(self) -> None:
        """Closes the connection (which ends its subscriptions: their iterations stop); calls in
        flight raise :class:`ClientClosed`. Calls already written are still handled by seamd."""
        if self._closed:
            return
        self._closed = True
        for subscription in list(self._subscriptions):
            subscription._end(None)
        self._subscriptions.clear()
        link = self._link
        self._link = None
        if link is not None:
            link.abort(ClientClosed("the client was closed", self.address), flush=True)
            try:
                await asyncio.wait_for(asyncio.shield(link.closed), 1.0)
            except asyncio.TimeoutError:
                if link.transport is not None:
                    link.transport.abort()


# --- subscriptions --------------------------------------------------------------------------


class _Lost:
    """In a subscription's queue: the connection was lost here."""


_LOST = _Lost()


@dataclass(frozen=True)
class _End:
    error: BaseException | None


class _SubscriptionCall:
    """The replies to one Subscribe call of a :class:`Subscription` (a new one after each reconnect)."""

    def __init__(self, subscription: Subscription, link: _Link, key: int, since: int | None) -> None:
        self.subscription = subscription
        self.link = link
        self.key = key
        self.since = since
        # Closed before its first reply: that reply's number is unsubscribed, the rest dropped.
        self.orphan = False
        self._unsubscribed = False

    def _orphan_reply(self, message: dict[str, Any]) -> bool:
        last = "error" in message or not _continues(message)
        parameters = message.get("parameters")
        number = parameters.get("subscription") if isinstance(parameters, dict) else None
        if not last and not self._unsubscribed and isinstance(number, int) and self.link.usable:
            self._unsubscribed = True
            try:
                self.link.write(encode({"method": "org.seam.Store.Unsubscribe", "parameters": {"subscription": number},
                                        "oneway": True}))
            except Error:
                pass
        return last

    def reply(self, message: dict[str, Any]) -> bool:
        if self.orphan:
            return self._orphan_reply(message)
        sub = self.subscription
        if sub._call is not self:
            return True
        if "error" in message:
            name = message.get("error")
            if name == SHUTTING_DOWN and not sub._ending:
                self.link.closing = True
                sub._detach()
                return True
            if name == SEQUENCE_AHEAD and self.since is not None and not sub._ending:
                # Resumed from beyond the broker (its stores restored from an older copy):
                # subscribe afresh; the first update is then a whole result.
                sub.sequence = None
                sub._start(self.link)
                return True
            try:
                _parameters(message, "org.seam.Store.Subscribe")
            except (SeamError, ProtocolError) as e:
                sub._end(e)
            return True
        try:
            parameters = _parameters(message, "org.seam.Store.Subscribe")
            update = Update.from_parameters(parameters, resumed=sub._resuming)
        except ProtocolError as e:
            sub._end(e)
            return True
        if update.subscription is not None:
            sub.subscription = update.subscription
        if update.kind == "end":
            sub.ended_at = update.sequence
            sub._end(None)
            return True
        sub._resuming = False
        sub.sequence = update.sequence
        sub._put(update)
        if not _continues(message):
            sub._end(None)
            return True
        return False

    def lost(self, error: Disconnected) -> None:
        sub = self.subscription
        if sub._call is self:
            sub._lost_error = error
            sub._detach()


class Subscription:
    """A live query of a :class:`Client` (made by :meth:`Client.subscribe`).

    Iterate it for :class:`Update`\\ s: a ``result`` first, then a ``diff`` per commit that
    changes the result (``resync`` now and then). When the connection is lost it connects
    again (retrying with a growing pause, up to the client's ``reconnect_timeout``) and
    subscribes with ``since`` its last ``sequence``: the next update is a ``diff`` from there,
    or a ``resync``. The iteration ends after :meth:`close`, or with the error that ended the
    subscription (a :class:`SeamError` such as ``LimitReached``, or :class:`Disconnected`
    when the client cannot reconnect).
    """

    def __init__(self, client: Client, query: dict[str, Any], since: int | None) -> None:
        self.client = client
        self.query = query
        self.entity: str = query["entity"]
        #: The broker's number for it (a new one after each reconnect).
        self.subscription: int | None = None
        #: The sequence of the last update received: where a resume starts.
        self.sequence: int | None = since
        #: The sequence the ``end`` reply gave, once the subscription ended by :meth:`close`.
        self.ended_at: int | None = None
        self._queue: deque[Update | _Lost | _End] = deque()
        self._wakeup = asyncio.Event()
        self._link: _Link | None = None
        self._call: _SubscriptionCall | None = None
        self._started = False
        self._resuming = since is not None
        self._ending = False  # close() asked
        self._ended = False  # no more updates will be queued
        self._finished = False  # the iteration has ended
        self._lost_error: Disconnected | None = None

    def __repr__(self) -> str:
        return f"<seam.Subscription {self.entity} #{self.subscription} at {self.sequence}>"

    # the replies

    def _put(self, item: Update | _Lost | _End) -> None:
        self._queue.append(item)
        self._wakeup.set()

    def _start(self, link: _Link) -> None:
        """Writes the Subscribe call on ``link`` (with ``since`` when resuming)."""
        parameters = dict(self.query)
        if self.sequence is not None:
            parameters["since"] = self.sequence
        if self._started:
            self._resuming = True
        self._started = True
        key = self.client._next_id()
        data = encode({"method": "org.seam.Store.Subscribe", "parameters": parameters, "more": True, "id": key})
        call = _SubscriptionCall(self, link, key, parameters.get("since"))
        link.write(data)
        link.handlers[key] = call
        self._call = call
        self._link = link
        self.subscription = None

    def _detach(self) -> None:
        """The connection is gone (or going): subscribe again on the next one."""
        if self._call is not None:
            self._call.link.handlers.pop(self._call.key, None)
        self._call = None
        self._link = None
        self.subscription = None
        if not self._ended:
            self._put(_LOST)

    def _end(self, error: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        if self._call is not None:
            self._call.link.handlers.pop(self._call.key, None)
        self._call = None
        self._link = None
        self.client._forget(self)
        self._put(_End(error))

    # iterating

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Update:
        while True:
            if self._queue:
                item = self._queue.popleft()
            elif self._finished:
                raise StopAsyncIteration
            elif self._link is None and not self._ended:
                await self._reattach()
                continue
            else:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if isinstance(item, Update):
                return item
            if isinstance(item, _End):
                self._finished = True
                if item.error is not None and not self._ending:
                    raise item.error
                raise StopAsyncIteration

    async def next(self, timeout: float | None = None) -> Update:
        """The next update; :class:`Timeout` when none comes within ``timeout`` seconds, and
        ``StopAsyncIteration`` once the subscription has ended."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"no update of {self!r} within {timeout} s") from None

    def drain(self) -> list[Update]:
        """The updates received and not yet iterated, without waiting (and without reconnecting).

        On the connection that saves, the diffs of its own subscriptions come before the reply
        to the save: after ``await client.save(...)`` they are all here."""
        taken: list[Update] = []
        while self._queue and not isinstance(self._queue[0], _End):
            item = self._queue.popleft()
            if isinstance(item, Update):
                taken.append(item)
        return taken

    async def _reattach(self) -> None:
        client = self.client
        if not client.reconnect:
            self._end(self._lost_error or client._no_reconnect(None))
            return
        pause = 0.05
        deadline = None if client.reconnect_timeout is None else time.monotonic() + client.reconnect_timeout
        while self._link is None and not self._ended:
            try:
                await client._ensure_link()
            except ClientClosed:
                self._end(None)
                return
            except (Disconnected, Timeout) as e:
                if deadline is not None and time.monotonic() + pause > deadline:
                    self._end(e)
                    return
                log.debug("seam: reconnecting to %s: %s", client.address, e)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 1.0)
            except (SeamError, ProtocolError) as e:
                self._end(e)  # Hello refused: nothing to resume as
                return

    # ending

    async def close(self) -> None:
        """Unsubscribes (when connected) and ends the iteration; updates not yet iterated are
        dropped."""
        if self._ending:
            return
        self._ending = True
        call = self._call
        if call is not None and call.link.usable and not self._ended:
            if self.subscription is not None:
                # Its last reply (kind "end") comes before the Unsubscribe's own.
                try:
                    await self.client._request(call.link, "org.seam.Store.Unsubscribe",
                                               {"subscription": self.subscription}, self.client.timeout)
                except (SeamError, Disconnected, Timeout, ProtocolError):
                    pass
            else:
                call.orphan = True  # unsubscribed when its first reply comes
                self._call = None
        self._end(None)
        self._queue.clear()
        self._put(_End(None))

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()


class LiveView:
    """A subscription and the :class:`LiveResult` it keeps (made by :meth:`Client.live`).

    Use it as ``async with``; iterating it yields the current rows (a list of dicts, in
    order) after each update. ``live`` is the :class:`LiveResult`; ``rows`` and ``sequence``
    are its own.
    """

    def __init__(self, client: Client, query: dict[str, Any]) -> None:
        self.client = client
        self.query = query
        self.live = LiveResult()
        self.subscription: Subscription | None = None

    @property
    def rows(self) -> list[Row]:
        return self.live.rows

    @property
    def sequence(self) -> int | None:
        return self.live.sequence

    async def __aenter__(self) -> LiveView:
        self.subscription = self.client.subscribe(**self.query)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        if self.subscription is not None:
            await self.subscription.close()

    def _subscription(self) -> Subscription:
        if self.subscription is None:
            raise RuntimeError("use the view in `async with client.live(...) as view:`")
        return self.subscription

    def __aiter__(self) -> LiveView:
        return self

    async def __anext__(self) -> list[Row]:
        update = await self._subscription().__anext__()
        self.live.apply(update)
        return self.live.rows

    async def next(self, timeout: float | None = None) -> list[Row]:
        """The rows after the next update (:class:`Timeout` past ``timeout`` seconds)."""
        update = await self._subscription().next(timeout)
        self.live.apply(update)
        return self.live.rows

    def drain(self) -> list[Row]:
        """Applies the updates already received (see :meth:`Subscription.drain`); the rows."""
        for update in self._subscription().drain():
            self.live.apply(update)
        return self.live.rows


# --- connecting ---------------------------------------------------------------------------


async def connect(socket: str | os.PathLike[str] | None = None, *, role: str | None = "cli", name: str | None = None,
                  capabilities: Mapping[str, Sequence[str]] | None = None, timeout: float | None = 10.0,
                  reconnect: bool = True, reconnect_timeout: float | None = None, fd: int | None = None,
                  max_frame: int = MAX_REPLY_FRAME) -> Client:
    """Connects to seamd and says ``Hello`` (``version`` 1, ``role``, ``name``, ``capabilities``
    — ``{"reads": [...], "writes": [...]}``); the reply is ``client.hello``.

    Where: ``socket`` (a path), else ``fd`` (a connected socket's descriptor), else the socket
    seamd handed this process (``$SEAM_FD``: the first connect of the process takes it), else
    ``$SEAM_SOCKET``, else :func:`default_socket_path`. ``timeout`` bounds connecting and each
    call (``None``: no bound). With ``reconnect`` (the default) the client connects again
    when the connection is lost — never for a descriptor, which cannot be reopened; its
    subscriptions retry for ``reconnect_timeout`` seconds (``None``: as long as they are
    iterated). ``max_frame`` is the largest reply frame accepted (512 MiB).

    Raises :class:`~seam.Unreachable` when nobody answers, :class:`~seam.SeamError` when
    ``Hello`` is refused (a built-in role claimed, a plugin without a name, an unknown entity
    among the capabilities), :class:`~seam.Timeout`.
    """
    address = _resolve(socket, fd)
    client = Client(address, role=role, name=name, capabilities=capabilities, timeout=timeout,
                    reconnect=reconnect, reconnect_timeout=reconnect_timeout, max_frame=max_frame)
    await client._ensure_link()
    return client
