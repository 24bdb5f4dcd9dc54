"""The conformance vectors (Protocol/vectors/protocol/*.json), each replayed on a fresh seamd
through the library's own framing (seam.FrameStream: seam.encode and seam.FrameDecoder).

The format is PROTOCOL.md's, "Conformance vectors": a step sends calls (or raw text, then a
NUL) and lists the replies it expects in order; "$string", "$int", "$number", "$bool",
"$null", "$uuid", "$date" and "$any" match by kind, "$capture:NAME" remembers a value and
"$ref:NAME" stands for it (in what is sent too); an object has exactly the keys expected
unless it holds "$partial": true.
"""

from __future__ import annotations

import json
import re
import unittest
from collections.abc import Callable
from typing import Any

import seam

from .support import VECTORS, Seamd, requires_seamd

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


KINDS: dict[str, Callable[[Any], bool]] = {
    "$any": lambda v: True,
    "$string": lambda v: isinstance(v, str),
    "$int": _is_int,
    "$number": lambda v: _is_int(v) or isinstance(v, float),
    "$bool": lambda v: isinstance(v, bool),
    "$null": lambda v: v is None,
    "$uuid": lambda v: isinstance(v, str) and UUID.fullmatch(v) is not None,
    "$date": lambda v: isinstance(v, str) and DATE.fullmatch(v) is not None,
}


class Mismatch(AssertionError):
    pass


class Replay:
    def __init__(self) -> None:
        self.captured: dict[str, Any] = {}

    def fill(self, sent: Any) -> Any:
        """What a step sends, with each "$ref:NAME" replaced by the value captured."""
        if isinstance(sent, str) and sent.startswith("$ref:"):
            name = sent[len("$ref:"):]
            if name not in self.captured:
                raise Mismatch(f"{name!r} is sent before it is captured")
            return self.captured[name]
        if isinstance(sent, list):
            return [self.fill(v) for v in sent]
        if isinstance(sent, dict):
            return {k: self.fill(v) for k, v in sent.items()}
        return sent

    def check(self, expected: Any, actual: Any, path: str) -> None:
        if isinstance(expected, str) and expected.startswith("$"):
            if expected.startswith("$capture:"):
                if actual is None:
                    raise Mismatch(f"{path}: null where a value is captured")
                self.captured[expected[len("$capture:"):]] = actual
                return
            if expected.startswith("$ref:"):
                name = expected[len("$ref:"):]
                if name not in self.captured:
                    raise Mismatch(f"{path}: {name!r} is not captured yet")
                self.check(self.captured[name], actual, path)
                return
            if expected not in KINDS:
                raise Mismatch(f"{path}: the vector uses an unknown matcher {expected}")
            if not KINDS[expected](actual):
                raise Mismatch(f"{path}: {json.dumps(actual)} is not {expected}")
            return
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                raise Mismatch(f"{path}: {json.dumps(actual)} is not an object")
            keys = set(expected) - {"$partial"}
            if keys - set(actual):
                raise Mismatch(f"{path}: {sorted(keys - set(actual))} missing from {json.dumps(actual)}")
            if not expected.get("$partial") and set(actual) - keys:
                raise Mismatch(f"{path}: {sorted(set(actual) - keys)} not expected in {json.dumps(actual)}")
            # A key captured beside one that refers to it: the capture first.
            order = sorted(keys, key=lambda k: 0 if isinstance(expected[k], str) and expected[k].startswith("$capture:") else 1)
            for key in order:
                self.check(expected[key], actual[key], f"{path}.{key}")
            return
        if isinstance(expected, list):
            if not isinstance(actual, list) or len(actual) != len(expected):
                raise Mismatch(f"{path}: {json.dumps(actual)} is not a list of {len(expected)}")
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.check(e, a, f"{path}[{i}]")
            return
        numbers = (int, float)
        same_kind = type(expected) is type(actual) or (isinstance(expected, numbers) and isinstance(actual, numbers)
                                                       and not isinstance(expected, bool) and not isinstance(actual, bool))
        if not same_kind or expected != actual:
            raise Mismatch(f"{path}: {json.dumps(actual)} where {json.dumps(expected)} was expected")

    async def run(self, vector: dict[str, Any], socket: str) -> None:
        async with await seam.FrameStream.open(socket) as stream:
            for number, step in enumerate(vector["steps"], 1):
                sends = step.get("send", [])
                for call in sends if isinstance(sends, list) else [sends]:
                    await stream.send(self.fill(call))
                if "raw" in step:
                    await stream.send_raw(step["raw"].encode("utf-8"))
                for index, expected in enumerate(step.get("expect", []), 1):
                    actual = await stream.receive(timeout=10)
                    if actual is None:
                        raise Mismatch(f"step {number}: the broker closed the connection before reply {index}")
                    self.check(expected, actual, f"step {number} reply {index}")
                if step.get("expectClose"):
                    extra = await stream.receive(timeout=10)
                    if extra is not None:
                        raise Mismatch(f"step {number}: {json.dumps(extra)} where the broker should have closed")


@requires_seamd
class VectorTests(unittest.IsolatedAsyncioTestCase):
    def test_there_are_vectors(self) -> None:
        self.assertGreaterEqual(len(sorted(VECTORS.glob("*.json"))), 10)

    async def test_every_vector(self) -> None:
        for path in sorted(VECTORS.glob("*.json")):
            vector = json.loads(path.read_text())
            with self.subTest(vector=vector["name"]):
                broker = Seamd().start()
                try:
                    await Replay().run(vector, broker.socket)
                finally:
                    broker.remove()

    def test_the_matcher_catches_what_differs(self) -> None:
        replay = Replay()
        replay.check({"a": "$capture:x", "b": "$ref:x"}, {"a": 1, "b": 1}, "$")
        for expected, actual in [({"a": 1}, {"a": 1, "b": 2}), ({"a": 1}, {"a": 2}), ({"a": "$int"}, {"a": 1.5}),
                                 ({"a": "$int"}, {"a": True}), ([1, 2], [1]), ({"a": "$ref:x"}, {"a": 2}),
                                 ({"a": "$uuid"}, {"a": "0F8FAD5B-D9CB-469F-A165-70867728950E"}), ({"a": "$date"}, {"a": "2026-01-01"})]:
            with self.subTest(expected=expected, actual=actual):
                with self.assertRaises(Mismatch):
                    replay.check(expected, actual, "$")
        replay.check({"$partial": True, "a": 1}, {"a": 1.0, "b": 2}, "$")


if __name__ == "__main__":
    unittest.main()
