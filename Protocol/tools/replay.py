#!/usr/bin/env python3
"""Replay Seam's protocol conformance vectors against a real seamd.

An independent client in another language: it knows only Protocol/PROTOCOL.md — NUL-framed
JSON over a Unix socket — and the vector format below. Each vector file runs against a fresh
seamd on empty stores (started here from --seamd, with --no-roles), or, with --socket, against
one that is already running (then vectors that count rows may not hold).

    python3 Protocol/tools/replay.py --seamd PATH/seamd [VECTOR.json ...]   (default: every vector)
    python3 Protocol/tools/replay.py --socket PATH [VECTOR.json ...]

A vector: {"name", "description", "steps": [STEP, ...]}. A step sends one or more frames and
reads the replies it expects, in order:

    {"send": CALL | [CALL, ...], "raw": "text sent as is, then a NUL",
     "expect": [REPLY, ...], "expectClose": true}

In what is expected, a string starting with "$" matches by kind: "$any", "$string", "$int",
"$number", "$bool", "$null", "$uuid" (lowercase), "$date" (RFC 3339, UTC, with fraction);
"$capture:NAME" matches any non-null value and remembers it, and "$ref:NAME" (in what is
sent, too) stands for the value remembered. An object matches when it has exactly the
expected keys, or at least them when it holds "$partial": true. Arrays match element by element.
"""
import argparse
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$")


class Mismatch(Exception):
    pass


def substitute(value, captured):
    """What is sent, with every "$ref:NAME" replaced by its captured value."""
    if isinstance(value, str) and value.startswith("$ref:"):
        if value[5:] not in captured:
            raise Mismatch(f"nothing captured as {value[5:]!r} to send")
        return captured[value[5:]]
    if isinstance(value, list):
        return [substitute(v, captured) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, captured) for k, v in value.items()}
    return value


def match(expected, actual, captured, where="$"):
    if isinstance(expected, str) and expected.startswith("$"):
        kind = expected
        if kind.startswith("$capture:"):
            if actual is None:
                raise Mismatch(f"{where}: expected a value to capture, got null")
            captured[kind[9:]] = actual
            return
        if kind.startswith("$ref:"):
            if kind[5:] not in captured:
                raise Mismatch(f"{where}: nothing captured as {kind[5:]!r} yet")
            return match(captured[kind[5:]], actual, captured, where)
        checks = {
            "$any": lambda v: True,
            "$string": lambda v: isinstance(v, str),
            "$int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "$number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "$bool": lambda v: isinstance(v, bool),
            "$null": lambda v: v is None,
            "$uuid": lambda v: isinstance(v, str) and UUID.match(v) is not None,
            "$date": lambda v: isinstance(v, str) and DATE.match(v) is not None,
        }
        if kind not in checks:
            raise Mismatch(f"{where}: unknown matcher {kind}")
        if not checks[kind](actual):
            raise Mismatch(f"{where}: expected {kind}, got {json.dumps(actual)}")
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise Mismatch(f"{where}: expected an object, got {json.dumps(actual)}")
        partial = expected.get("$partial", False)
        keys = {k for k in expected if k != "$partial"}
        missing = keys - actual.keys()
        if missing:
            raise Mismatch(f"{where}: missing {sorted(missing)} in {json.dumps(actual)}")
        extra = actual.keys() - keys
        if extra and not partial:
            raise Mismatch(f"{where}: unexpected {sorted(extra)} in {json.dumps(actual)}")
        # Captures first, so that a reference beside them (in any order) sees the value.
        capturing = lambda k: isinstance(expected[k], str) and expected[k].startswith("$capture:")
        for k in sorted(keys, key=lambda k: (not capturing(k), k)):
            match(expected[k], actual[k], captured, f"{where}.{k}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            raise Mismatch(f"{where}: expected {len(expected)} items, got {json.dumps(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            match(e, a, captured, f"{where}[{i}]")
        return
    if type(expected) is not type(actual) and not (isinstance(expected, (int, float)) and isinstance(actual, (int, float))):
        raise Mismatch(f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}")
    if expected != actual:
        raise Mismatch(f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}")


class Connection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(path)
        self.buffer = b""

    def send(self, data):
        self.sock.sendall(data + b"\0")

    def read(self):
        """The next frame as JSON, or None when the broker closed the connection."""
        while b"\0" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        frame, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(frame.decode("utf-8"))


def replay(vector, path):
    conn = Connection(path)
    captured = {}
    for n, step in enumerate(vector["steps"]):
        where = f"{vector['name']} step {n + 1}"
        sends = step.get("send", [])
        for call in sends if isinstance(sends, list) else [sends]:
            conn.send(json.dumps(substitute(call, captured), separators=(",", ":")).encode())
        if "raw" in step:
            conn.send(step["raw"].encode("utf-8", "surrogateescape"))
        for i, expected in enumerate(step.get("expect", [])):
            actual = conn.read()
            if actual is None:
                raise Mismatch(f"{where}: the broker closed the connection before reply {i + 1}")
            try:
                match(expected, actual, captured)
            except Mismatch as e:
                raise Mismatch(f"{where}, reply {i + 1}: {e}") from None
        if step.get("expectClose"):
            if conn.read() is not None:
                raise Mismatch(f"{where}: expected the broker to close the connection")


class Seamd:
    """A fresh seamd on empty stores in a temporary directory."""

    def __init__(self, executable):
        self.directory = tempfile.mkdtemp(prefix="seam-replay-")
        self.socket = os.path.join(self.directory, "s.sock")
        self.process = subprocess.Popen([executable, "--data-dir", os.path.join(self.directory, "data"), "--socket", self.socket,
                                         "--no-roles"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                Connection(self.socket).sock.close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("seamd did not answer within 20 s")

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        subprocess.run(["rm", "-rf", self.directory])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--seamd", help="a seamd executable: a fresh one per vector")
    where.add_argument("--socket", help="a running seamd's socket")
    parser.add_argument("vectors", nargs="*")
    args = parser.parse_args()
    files = args.vectors or sorted(str(p) for p in (pathlib.Path(__file__).parent.parent / "vectors" / "protocol").glob("*.json"))
    failed = 0
    for f in files:
        vector = json.loads(pathlib.Path(f).read_text())
        broker = Seamd(args.seamd) if args.seamd else None
        try:
            replay(vector, broker.socket if broker else args.socket)
            print(f"ok    {vector['name']}")
        except (Mismatch, OSError, ValueError) as e:
            failed += 1
            print(f"FAIL  {vector['name']}: {e}")
        finally:
            if broker:
                broker.stop()
    print(f"{len(files) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
