"""Frames on their own: encoding, decoding, and splitting a stream however reads cut it."""

from __future__ import annotations

import datetime
import json
import unittest

import seam
from seam.framing import FrameDecoder, decode, encode


class EncodeTests(unittest.TestCase):
    def test_a_frame_is_compact_utf8_json_and_a_nul(self) -> None:
        data = encode({"method": "org.seam.Store.Fetch", "parameters": {"entity": "Timer", "name": "Tée"}})
        self.assertTrue(data.endswith(b"\0"))
        self.assertEqual(data.count(b"\0"), 1)
        self.assertEqual(json.loads(data[:-1].decode("utf-8")), {"method": "org.seam.Store.Fetch", "parameters": {"entity": "Timer", "name": "Tée"}})
        self.assertNotIn(b" ", data)
        self.assertIn("Tée".encode(), data)

    def test_u0000_in_text_is_escaped_so_the_frame_holds_one_nul(self) -> None:
        data = encode({"text": "a\0b"})
        self.assertEqual(data.count(b"\0"), 1)
        self.assertEqual(decode(data[:-1]), {"text": "a\0b"})

    def test_what_the_broker_would_refuse_is_refused_before_sending(self) -> None:
        with self.assertRaises(ValueError):
            encode({"x": float("nan")})
        with self.assertRaises(ValueError):
            encode({"x": float("inf")})
        with self.assertRaises(ValueError):
            encode({"x": "\ud800"})
        with self.assertRaises(TypeError):
            encode({"x": object()})
        with self.assertRaises(seam.RequestTooLarge) as caught:
            encode({"x": "a" * (4 * 1024 * 1024)})
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIn("4194304", str(caught.exception))

    def test_dates_and_bytes(self) -> None:
        moment = datetime.datetime(2026, 11, 30, 22, 16, 10, 250000, tzinfo=datetime.timezone.utc)
        self.assertEqual(decode(encode({"d": moment, "b": b"\x00\xff"})[:-1]), {"d": "2026-11-30T22:16:10.250000Z", "b": "AP8="})
        with self.assertRaises(ValueError):
            encode({"d": datetime.datetime(2026, 1, 1)})
        self.assertEqual(seam.parse_date("2026-11-30T22:16:10.250000Z"), moment)
        self.assertEqual(seam.format_date(seam.parse_date("0001-01-01T00:00:00.000000Z")), "0001-01-01T00:00:00.000000Z")


class DecodeTests(unittest.TestCase):
    def test_frames_that_cannot_be_read(self) -> None:
        for frame, words in [(b"{not json", "not JSON"), (b'{"a":NaN}', "NaN"), (b'{"a":Infinity}', "Infinity"),
                             (b'{"a":1e400}', "too large"), (b'{"a":"\xff"}', "UTF-8"), (b"[" * 100000 + b"]" * 100000, "deeply"),
                             (b'{"a":' + b"9" * 5000 + b"}", "not JSON")]:
            with self.subTest(frame=frame[:20]):
                with self.assertRaises(seam.FrameError) as caught:
                    decode(frame)
                self.assertIn(words, str(caught.exception))
                self.assertIsInstance(caught.exception, seam.ProtocolError)

    def test_a_tiny_number_reads_as_zero(self) -> None:
        self.assertEqual(decode(b'{"a":1e-400,"b":-1e-400}'), {"a": 0.0, "b": -0.0})


class DecoderTests(unittest.TestCase):
    def test_frames_split_anywhere_come_out_whole_and_in_order(self) -> None:
        messages = [{"id": i, "parameters": {"text": "x" * i, "é": [i, None, True]}} for i in range(50)]
        stream = b"".join(encode(m) for m in messages)
        for size in (1, 2, 3, 7, 64, 1000, len(stream)):
            with self.subTest(size=size):
                decoder = FrameDecoder()
                out: list[object] = []
                for start in range(0, len(stream), size):
                    out.extend(decoder.feed(stream[start:start + size]))
                self.assertEqual(out, messages)
                self.assertEqual(decoder.pending, 0)

    def test_the_frames_before_a_bad_one_are_delivered_first(self) -> None:
        decoder = FrameDecoder()
        frames = decoder.feed(b'{"id":1}\0{"id":2}\0{oops}\0{"id":3}\0')
        self.assertEqual(next(frames), {"id": 1})
        self.assertEqual(next(frames), {"id": 2})
        with self.assertRaises(seam.FrameError):
            next(frames)

    def test_an_oversized_frame_is_refused_before_its_nul_arrives(self) -> None:
        decoder = FrameDecoder(max_frame=100)
        self.assertEqual(list(decoder.feed(b"{" + b" " * 50)), [])
        with self.assertRaises(seam.FrameError) as caught:
            list(decoder.feed(b" " * 60))
        self.assertIn("larger than 100", str(caught.exception))
        decoder = FrameDecoder(max_frame=100)
        with self.assertRaises(seam.FrameError):
            list(decoder.feed(b'{"a":"' + b"x" * 200 + b'"}\0'))

    def test_a_frame_at_the_limit_is_taken(self) -> None:
        frame = encode({"a": "x" * 90})
        decoder = FrameDecoder(max_frame=len(frame) - 1)
        self.assertEqual(list(decoder.feed(frame)), [{"a": "x" * 90}])

    def test_an_unfinished_frame_is_pending(self) -> None:
        decoder = FrameDecoder()
        self.assertEqual(list(decoder.feed(b'{"id":1}\0{"id"')), [{"id": 1}])
        self.assertEqual(decoder.pending, 5)
        self.assertEqual(list(decoder.feed(b":2}\0")), [{"id": 2}])
        self.assertEqual(decoder.pending, 0)


if __name__ == "__main__":
    unittest.main()
