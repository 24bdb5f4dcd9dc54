"""Subscription updates and the rows they keep current (PROTOCOL.md, "Subscriptions")."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import DiffError, ProtocolError

__all__ = ["Update", "LiveResult", "Row"]

#: A row: attribute name to JSON value, ``uuid`` first.
Row = dict[str, Any]

KINDS = ("result", "diff", "resync", "end")


@dataclass(frozen=True)
class Update:
    """One reply of a subscription.

    ``kind`` is ``result`` (the first: the whole result), ``diff`` (what one commit changed, or
    on a resume what changed since), ``resync`` (the whole result again, after the subscriber
    fell behind or after a reconnect the broker could not bridge with a diff) or ``end``;
    ``sequence`` is the save the result now reflects; ``parameters`` the reply's parameters as
    they came. ``resumed`` is true for the first update after the library subscribed again
    (a reconnect).
    """

    kind: str
    sequence: int
    parameters: dict[str, Any] = field(repr=False)
    resumed: bool = False

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], *, resumed: bool = False) -> Update:
        """An update from a reply's parameters; :class:`~seam.ProtocolError` if it has no
        ``kind`` the protocol knows or no integer ``sequence``."""
        kind = parameters.get("kind")
        sequence = parameters.get("sequence")
        if kind not in KINDS:
            raise ProtocolError(f"a subscription reply of kind {kind!r}")
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            raise ProtocolError(f"a subscription reply whose sequence is {sequence!r}")
        return cls(kind=kind, sequence=sequence, parameters=dict(parameters), resumed=resumed)

    @property
    def subscription(self) -> int | None:
        """The broker's number for the subscription (it changes when the library subscribes again)."""
        value = self.parameters.get("subscription")
        return value if isinstance(value, int) else None

    @property
    def rows(self) -> list[Row] | None:
        """``result`` and ``resync``: the whole result, in order."""
        value = self.parameters.get("rows")
        return value if isinstance(value, list) else None

    @property
    def from_sequence(self) -> int | None:
        """``resync``: the last sequence the subscriber had (the parameter ``from``)."""
        value = self.parameters.get("from")
        return value if isinstance(value, int) else None

    def _list(self, key: str) -> list[dict[str, Any]]:
        value = self.parameters.get(key)
        return value if isinstance(value, list) else []

    @property
    def deleted(self) -> list[dict[str, Any]]:
        """``diff``: ``[{uuid, index}]``, positions in the previous result."""
        return self._list("deleted")

    @property
    def inserted(self) -> list[dict[str, Any]]:
        """``diff``: ``[{uuid, index, row}]``, positions in the new result."""
        return self._list("inserted")

    @property
    def updated(self) -> list[dict[str, Any]]:
        """``diff``: ``[{uuid, index, changedKeys, row}]``, positions in the new result."""
        return self._list("updated")

    @property
    def moved(self) -> list[dict[str, Any]]:
        """``diff``: ``[{uuid, from, to}]``: ``from`` in the previous result, ``to`` in the new."""
        return self._list("moved")

    @property
    def empty(self) -> bool:
        """A diff that changes nothing (the first reply of a resume with nothing since)."""
        return self.kind == "diff" and not (self.deleted or self.inserted or self.updated or self.moved)


def _index(entry: Any, key: str, what: str) -> int:
    if not isinstance(entry, dict):
        raise DiffError(f"{what}: an entry that is not an object: {entry!r}")
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DiffError(f"{what}: {key} {value!r} is not a position")
    return value


def _uuid(entry: dict[str, Any], what: str) -> str:
    value = entry.get("uuid")
    if not isinstance(value, str):
        raise DiffError(f"{what}: uuid {value!r} is not text")
    return value


def _row(entry: dict[str, Any], uuid: str, what: str) -> Row:
    row = entry.get("row")
    if not isinstance(row, dict):
        raise DiffError(f"{what} {uuid}: row {row!r} is not an object")
    if row.get("uuid", uuid) != uuid:
        raise DiffError(f"{what} {uuid}: its row has uuid {row.get('uuid')!r}")
    return row


class LiveResult:
    """The rows of a subscription, kept current by applying its updates in order.

    ``rows`` is the result (a list of row dicts in the query's order), ``sequence`` the save it
    reflects (``None`` before the first result). :meth:`apply` takes each :class:`Update` (or
    a reply's parameters) exactly as PROTOCOL.md says: a ``result`` or ``resync`` replaces the
    rows; a ``diff`` removes ``deleted`` and ``moved`` rows (positions in the previous result),
    inserts ``inserted`` and the moved rows in ascending order of their new positions, then
    replaces the ``updated`` rows at their new positions. Each apply builds a new list, so a
    ``rows`` list handed out earlier never changes under its holder.
    """

    def __init__(self, rows: Sequence[Row] | None = None, sequence: int | None = None) -> None:
        self.rows: list[Row] = list(rows) if rows is not None else []
        self.sequence: int | None = sequence
        self._held = rows is not None

    @property
    def held(self) -> bool:
        """Whether a result has been applied (or given) yet."""
        return self._held

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __repr__(self) -> str:
        return f"LiveResult(sequence={self.sequence}, rows={len(self.rows)})"

    def uuids(self) -> list[str]:
        """The rows' uuids, in order."""
        return [row["uuid"] for row in self.rows]

    def apply(self, update: Update | Mapping[str, Any]) -> None:
        """Applies one update; :class:`~seam.DiffError` (the rows left as they were) when it
        does not follow the result held. An ``end`` changes nothing."""
        if not isinstance(update, Update):
            update = Update.from_parameters(update)
        if update.kind in ("result", "resync"):
            rows = update.rows
            if rows is None or not all(isinstance(r, dict) for r in rows):
                raise DiffError(f"a {update.kind} without a list of rows")
            self.rows = list(rows)
            self.sequence = update.sequence
            self._held = True
        elif update.kind == "diff":
            self._apply_diff(update)
        # "end" says where the result stood when the subscription ended: nothing to change.

    def _apply_diff(self, diff: Update) -> None:
        if not self._held or self.sequence is None:
            raise DiffError(f"a diff (sequence {diff.sequence}) with no result held before it")
        if diff.sequence < self.sequence or (diff.sequence == self.sequence and not diff.empty):
            raise DiffError(f"a diff at sequence {diff.sequence} does not follow the result held at {self.sequence}")
        previous = self.rows

        # 1. Remove the deleted rows and the moved ones (kept aside), by their previous positions.
        removed: dict[int, str] = {}
        for entry in diff.deleted:
            index = _index(entry, "index", "deleted")
            if index in removed:
                raise DiffError(f"deleted: position {index} is given twice")
            removed[index] = _uuid(entry, "deleted")
        arriving: list[tuple[int, Row]] = []
        for entry in diff.moved:
            start = _index(entry, "from", "moved")
            to = _index(entry, "to", "moved")
            uuid = _uuid(entry, "moved")
            if start in removed:
                raise DiffError(f"moved {uuid}: position {start} is removed twice")
            removed[start] = uuid
            if start < len(previous):
                arriving.append((to, previous[start]))
        for index, uuid in removed.items():
            if index >= len(previous):
                raise DiffError(f"{uuid}: position {index} is past the {len(previous)} rows held")
            held = previous[index].get("uuid")
            if held != uuid:
                raise DiffError(f"{uuid}: position {index} holds {held!r}")
        rows = [row for i, row in enumerate(previous) if i not in removed]

        # 2. Insert the new rows and the moved ones in ascending order of their new positions.
        for entry in diff.inserted:
            index = _index(entry, "index", "inserted")
            uuid = _uuid(entry, "inserted")
            arriving.append((index, _row(entry, uuid, "inserted")))
        arriving.sort(key=lambda pair: pair[0])
        merged: list[Row] = []
        kept = iter(rows)
        for position, row in arriving:
            if merged and position < len(merged):
                raise DiffError(f"{row.get('uuid')}: position {position} is given twice")
            while len(merged) < position:
                following = next(kept, None)
                if following is None:
                    raise DiffError(f"{row.get('uuid')}: position {position} is past the {len(merged)} rows at that point")
                merged.append(following)
            merged.append(row)
        merged.extend(kept)
        rows = merged

        # 3. Replace the updated rows at their new positions.
        for entry in diff.updated:
            index = _index(entry, "index", "updated")
            uuid = _uuid(entry, "updated")
            if index >= len(rows):
                raise DiffError(f"updated {uuid}: position {index} is past the {len(rows)} rows")
            held = rows[index].get("uuid")
            if held != uuid:
                raise DiffError(f"updated {uuid}: position {index} holds {held!r}")
            rows[index] = _row(entry, uuid, "updated")

        if len({row.get("uuid") for row in rows}) != len(rows):
            raise DiffError(f"the diff at sequence {diff.sequence} leaves a uuid twice in the result")
        self.rows = rows
        self.sequence = diff.sequence
