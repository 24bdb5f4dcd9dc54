"""A fake broker (a Unix socket this test serves itself) that answers badly: frames cut short,
not JSON, too large, without their NUL; error replies of odd shapes; silence. The library
must say clearly what happened, and never hang."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import unittest
from collections.abc import Awaitable, Callable
from typing import Any

import seam
from seam.framing import FrameDecoder

HELLO = {"version": 1, "role": "cli", "author": "cli", "product": "fake", "sequence": 0}

# How the fake answers a call: given the call, it writes what it likes (and may close).
Answer = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[None]]


def frame(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\0"


class FakeBroker:
    """Answers Hello as seamd would, and every other call with ``answer``."""

    def __init__(self, answer: Answer, hello: Answer | None = None) -> None:
        self.answer = answer
        self.hello = hello
        self.directory = tempfile.mkdtemp(prefix="seam-py-fake-")
        self.path = os.path.join(self.directory, "fake.sock")
        self.connections = 0
        self.calls: list[dict[str, Any]] = []
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> FakeBroker:
        self.server = await asyncio.start_unix_server(self._serve, self.path)
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        decoder = FrameDecoder()
        try:
            while not writer.is_closing():
                data = await reader.read(65536)
                if not data:
                    break
                for call in decoder.feed(data):
                    self.calls.append(call)
                    if call.get("method") == "org.seam.Store.Hello":
                        if self.hello is not None:
                            await self.hello(call, writer)
                        else:
                            writer.write(frame({"parameters": HELLO, "id": call.get("id")}))
                    else:
                        await self.answer(call, writer)
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        for writer in self._writers:
            writer.close()
        self.server.close()
        await self.server.wait_closed()
        for name in os.listdir(self.directory):
            os.unlink(os.path.join(self.directory, name))
        os.rmdir(self.directory)


def reply_with(*chunks: bytes, close: bool = False) -> Answer:
    async def answer(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        for chunk in chunks:
            writer.write(chunk.replace(b"$ID", str(call.get("id")).encode()))
        await writer.drain()
        if close:
            writer.close()
    return answer


class BadInputTests(unittest.IsolatedAsyncioTestCase):
    async def broker(self, answer: Answer, hello: Answer | None = None) -> FakeBroker:
        fake = await FakeBroker(answer, hello).start()
        self.addAsyncCleanup(fake.stop)
        return fake

    async def client(self, fake: FakeBroker, **options: Any) -> seam.Client:
        client = await seam.connect(fake.path, timeout=2.0, **options)
        self.addAsyncCleanup(client.close)
        return client

    async def fails(self, answer: Answer, error: type[BaseException], words: str, **options: Any) -> BaseException:
        fake = await self.broker(answer)
        client = await self.client(fake, **options)
        started = time.monotonic()
        with self.assertRaises(error) as caught:
            await client.count("Timer")
        self.assertLess(time.monotonic() - started, 1.5, "it must not wait for a timeout")
        self.assertIn(words, str(caught.exception))
        return caught.exception

    async def test_a_frame_cut_short_then_closed(self) -> None:
        e = await self.fails(reply_with(b'{"parameters":{"count":1', close=True), seam.Disconnected, "middle of a frame")
        self.assertIsInstance(e, seam.BrokenConnection)

    async def test_a_frame_without_its_nul_then_closed(self) -> None:
        e = await self.fails(reply_with(b'{"parameters":{"count":1,"sequence":0},"id":$ID}', close=True), seam.Disconnected,
                             "without their NUL")
        self.assertIsInstance(e, seam.ProtocolError)

    async def test_a_frame_that_is_not_json(self) -> None:
        e = await self.fails(reply_with(b"{this is not json}\0"), seam.BrokenConnection, "not JSON")
        self.assertIsInstance(e, seam.Disconnected)
        self.assertIsInstance(e, seam.ProtocolError)

    async def test_frames_that_cannot_be_read_each_drop_the_connection(self) -> None:
        for chunk, words in [(b'{"parameters":{"x":NaN},"id":$ID}\0', "NaN"), (b'{"parameters":{"x":"\xff"},"id":$ID}\0', "UTF-8"),
                             (b"[1,2]\0", "not a JSON object"), (b"null\0", "not a JSON object"), (b"[" * 5000 + b"]" * 5000 + b"\0", "deeply"),
                             (b'{"parameters":{"x":1e999},"id":$ID}\0', "too large")]:
            with self.subTest(words=words):
                await self.fails(reply_with(chunk), seam.BrokenConnection, words)

    async def test_an_oversized_frame_is_refused_before_its_end(self) -> None:
        # 3,000 bytes and no NUL, the connection left open: it must not wait for more.
        await self.fails(reply_with(b'{"parameters":{"x":"' + b"y" * 3000), seam.BrokenConnection, "larger than 1024", max_frame=1024)

    async def test_after_a_broken_connection_the_next_call_connects_again(self) -> None:
        answers = iter([b"{garbage\0", frame({"parameters": {"count": 7, "sequence": 0}, "id": "$ID"}).replace(b'"$ID"', b"$ID")])

        async def answer(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            writer.write(next(answers).replace(b"$ID", str(call["id"]).encode()))

        fake = await self.broker(answer)
        client = await self.client(fake)
        with self.assertRaises(seam.BrokenConnection):
            await client.count("Timer")
        self.assertEqual(await client.count("Timer"), 7)
        self.assertEqual(fake.connections, 2)
        self.assertEqual([c["method"] for c in fake.calls], ["org.seam.Store.Hello", "org.seam.Store.Count"] * 2)

    async def test_error_replies_of_odd_shapes(self) -> None:
        shapes: list[tuple[bytes, type[BaseException], str]] = [
            (b'{"error":"org.example.Odd","parameters":[1,2],"id":$ID}\0', seam.SeamError, "parameters that are not an object: [1,2]"),
            (b'{"error":"org.example.Odd","parameters":{"message":5,"why":["a",null]},"id":$ID}\0', seam.SeamError,
             'message=5, why=["a",null]'),
            (b'{"error":"org.example.Odd","id":$ID}\0', seam.SeamError, "org.example.Odd"),
            (b'{"error":7,"id":$ID}\0', seam.ProtocolError, "not a name"),
            (b'{"parameters":"text","id":$ID}\0', seam.ProtocolError, "not an object"),
            (b'{"parameters":{"sequence":0},"id":$ID}\0', seam.ProtocolError, "without a count"),
        ]
        for chunk, error, words in shapes:
            with self.subTest(chunk=chunk):
                fake = await self.broker(reply_with(chunk))
                client = await self.client(fake)
                with self.assertRaises(error) as caught:
                    await client.count("Timer")
                self.assertIn(words, str(caught.exception))
                self.assertNotIsInstance(caught.exception, seam.Disconnected)
                self.assertTrue(client.connected, "a reply of the wrong shape leaves the connection usable")
        odd = seam.SeamError("org.example.Odd", {"message": 5})
        self.assertEqual(odd.message, None)
        self.assertEqual(odd.short_name, "Odd")
        self.assertEqual(odd.interface, "org.example")

    async def test_replies_for_no_call_are_ignored(self) -> None:
        fake = await self.broker(reply_with(b'{"parameters":{"count":1,"sequence":0},"id":999}\0', b'{"parameters":{},"id":"x"}\0',
                                            b'{"parameters":{}}\0', b'{"parameters":{"count":2,"sequence":0},"id":$ID}\0'))
        client = await self.client(fake)
        self.assertEqual(await client.count("Timer"), 2)

    async def test_silence_is_a_timeout_and_the_connection_stays(self) -> None:
        async def silent(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            if call["parameters"]["entity"] == "Timer":
                writer.write(frame({"parameters": {"count": 3, "sequence": 0}, "id": call["id"]}))

        fake = await self.broker(silent)
        client = await self.client(fake)
        started = time.monotonic()
        with self.assertRaises(seam.Timeout):
            await client.count("Session", timeout=0.3)
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual(await client.count("Timer"), 3)
        self.assertEqual(fake.connections, 1)

    async def test_connect_to_a_broker_that_closes_or_says_nothing_or_refuses(self) -> None:
        async def close(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            writer.close()

        async def nothing(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            pass

        async def refuse(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            writer.write(frame({"error": "org.seam.Store.UnsupportedVersion", "parameters": {"supported": [2], "message": "no"},
                                "id": call["id"]}))

        for hello, error in [(close, seam.Disconnected), (nothing, seam.Timeout), (refuse, seam.SeamError)]:
            with self.subTest(hello=hello.__name__):
                fake = await self.broker(reply_with(), hello)
                started = time.monotonic()
                with self.assertRaises(error) as caught:  # type: ignore[var-annotated]
                    await seam.connect(fake.path, timeout=0.5)
                self.assertLess(time.monotonic() - started, 1.5)
                if error is seam.SeamError:
                    self.assertEqual(str(caught.exception), "org.seam.Store.UnsupportedVersion: no (supported=[2])")

    async def test_a_subscription_reply_of_the_wrong_shape_ends_it_with_a_protocol_error(self) -> None:
        async def answer(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            writer.write(frame({"parameters": {"subscription": 1, "kind": "result", "sequence": 0, "rows": []}, "continues": True, "id": call["id"]}))
            writer.write(frame({"parameters": {"subscription": 1, "kind": "surprise", "sequence": 1}, "continues": True, "id": call["id"]}))

        fake = await self.broker(answer)
        client = await self.client(fake)
        sub = client.subscribe("Timer")
        self.assertEqual((await sub.next(2)).kind, "result")
        with self.assertRaises(seam.ProtocolError) as caught:
            await sub.next(2)
        self.assertIn("surprise", str(caught.exception))

    async def test_a_diff_that_does_not_fit_is_a_diff_error(self) -> None:
        async def answer(call: dict[str, Any], writer: asyncio.StreamWriter) -> None:
            writer.write(frame({"parameters": {"subscription": 1, "kind": "result", "sequence": 0, "rows": []}, "continues": True, "id": call["id"]}))
            writer.write(frame({"parameters": {"subscription": 1, "kind": "diff", "sequence": 1, "deleted": [{"uuid": "a", "index": 0}],
                                               "inserted": [], "updated": [], "moved": []}, "continues": True, "id": call["id"]}))

        fake = await self.broker(answer)
        client = await self.client(fake)
        async with client.live("Timer") as view:
            self.assertEqual(await view.next(2), [])
            with self.assertRaises(seam.DiffError):
                await view.next(2)


if __name__ == "__main__":
    unittest.main()
