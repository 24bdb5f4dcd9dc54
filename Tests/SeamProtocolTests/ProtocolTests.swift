import SeamJSON
import SeamProtocol
import SeamSchema
import XCTest

/// The protocol without sockets: framing, messages, values, fuzzing of both decoders.
final class ProtocolTests: XCTestCase {
    func testFramesSplitOnNULWhateverTheChunking() throws {
        let messages = [#"{"method":"a.B"}"#, #"{"method":"c.D","parameters":{"x":1}}"#, "{}"]
        let stream: [UInt8] = messages.flatMap { Array($0.utf8) + [UInt8(0)] }
        var g = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var decoder = FrameDecoder(maxFrameBytes: 100)
            var frames: [String] = []
            var i = 0
            while i < stream.count {
                let n = Int.random(in: 1...7, using: &g)
                decoder.append(stream[i..<min(i + n, stream.count)])
                i += n
                while let f = try decoder.next() { frames.append(String(decoding: f, as: UTF8.self)) }
            }
            XCTAssertEqual(frames, messages)
            XCTAssertEqual(decoder.pendingBytes, 0)
        }
    }

    func testAFrameWithoutNULPastTheLimitIsAnError() {
        var decoder = FrameDecoder(maxFrameBytes: 10)
        decoder.append(Array("0123456789".utf8))
        XCTAssertFalse(decoder.hasCompleteFrame())
        XCTAssertNoThrow(try decoder.next())
        decoder.append([UInt8(ascii: "x")])
        // Said by both: the broker looks at a connection's calls only when it has one.
        XCTAssertTrue(decoder.hasCompleteFrame(), "past the limit, next() has an error to give")
        XCTAssertThrowsError(try decoder.next())
    }

    /// Whole when it arrives (its NUL in the same read) makes no difference: too long is too long.
    func testAWholeFramePastTheLimitIsAnError() {
        var decoder = FrameDecoder(maxFrameBytes: 10)
        decoder.append(Array("0123456789".utf8) + [0])
        XCTAssertEqual(try decoder.next().map { Array($0) }, Array("0123456789".utf8))
        decoder.append(Array("0123456789x".utf8) + [0])
        XCTAssertThrowsError(try decoder.next())
    }

    /// A reply streamed straight to bytes is the reply built as a value, byte for byte.
    func testStreamedRepliesMatchBuiltOnes() {
        for (id, continues) in [(JSON?.none, false), (.integer(7), true), (.string("x\u{E9}"), false)] {
            let built = Reply(parameters: ["rows": [["uuid": "u", "n": 1.5]], "sequence": 3], continues: continues, id: id).frame()
            let streamed = Reply.frame(id: id, continues: continues) { w in
                w.key("rows")
                w.beginArray()
                w.beginObject()
                w.key("uuid"); w.string("u")
                w.key("n"); w.double(1.5)
                w.endObject()
                w.endArray()
                w.key("sequence"); w.integer(3)
            }
            XCTAssertEqual(String(decoding: streamed, as: UTF8.self), String(decoding: built, as: UTF8.self))
        }
    }

    func testCallsAndReplies() throws {
        let call = try Call(try JSON.decode(#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Timer"},"more":true,"id":"a"}"#))
        XCTAssertEqual(call.interface, "org.seam.Store")
        XCTAssertEqual(call.member, "Fetch")
        XCTAssertTrue(call.more)
        XCTAssertEqual(call.id, .string("a"))
        let reply = Reply(.notFound(entity: "Timer", uuid: "u"), id: call.id)
        let back = try Reply(try JSON.decode(Array(reply.frame().dropLast())))
        XCTAssertEqual(back.error, "org.seam.Store.NotFound")
        XCTAssertEqual(back.id, .string("a"))
        for bad in [#"{}"#, #"{"method":""}"#, #"{"method":"a.B","parameters":3}"#, #"{"method":"a.B","oneway":1}"#,
                    #"{"method":"a.B","id":[1]}"#] {
            XCTAssertThrowsError(try Call(try JSON.decode(bad)), bad) { e in
                XCTAssertEqual((e as? VarlinkError)?.name, "org.varlink.service.InvalidParameter")
            }
        }
        XCTAssertThrowsError(try Call(try JSON.decode("[]")), "not an object: not a call at all") { e in
            XCTAssertEqual((e as? VarlinkError)?.name, "org.seam.Store.InvalidRequest")
        }
    }

    func testDatesAreRFC3339() {
        XCTAssertEqual(RFC3339.format(0), "1970-01-01T00:00:00.000000Z")
        XCTAssertEqual(RFC3339.format(1_764_540_970.25), "2025-11-30T22:16:10.250000Z")
        XCTAssertEqual(RFC3339.format(-1.5), "1969-12-31T23:59:58.500000Z")
        XCTAssertEqual(RFC3339.parse("2025-11-30T22:16:10.250000Z"), 1_764_540_970.25)
        XCTAssertEqual(RFC3339.parse("2025-11-30T23:16:10+01:00"), 1_764_540_970)
        XCTAssertEqual(RFC3339.parse("2000-02-29T00:00:00Z"), 951_782_400)
        XCTAssertEqual(RFC3339.parse("1970-01-01T00:00:01.703108Z"), 1.703108, "the nearest double, as date(\"…\") reads it")
        XCTAssertEqual(RFC3339.parse("1969-12-31T23:59:58.296892Z"), -1.703108)
        for bad in ["", "2025-11-30", "2025-13-01T00:00:00Z", "2025-11-30T22:16:10", "2025-11-30T22:16:10.Z", "2025-11-30T25:00:00Z",
                    "2025-11-30T22:16:10Zjunk",
                    // Strict: a day past the month's end, a 60th second, an offset past a day are
                    // refused, not carried into what follows.
                    "2026-02-31T00:00:00Z", "2026-04-31T12:00:00Z", "2023-02-29T00:00:00Z", "2100-02-29T00:00:00Z",
                    "2026-11-30T23:59:60Z", "2026-11-30T10:00:00+99:99", "2026-11-30T10:00:00+23:60"] {
            XCTAssertNil(RFC3339.parse(bad), bad)
        }
        XCTAssertNotNil(RFC3339.parse("2024-02-29T00:00:00Z"))
        XCTAssertNotNil(RFC3339.parse("2026-11-30T10:00:00-23:59"))
        // The ends of the range write as themselves (the last microsecond of 9999 is no double:
        // its nearest rounded up into year 10000, written "0000").
        XCTAssertEqual(RFC3339.format(RFC3339.range.upperBound), "9999-12-31T23:59:59.999999Z")
        XCTAssertEqual(RFC3339.format(253_402_300_800), "9999-12-31T23:59:59.999999Z")
        XCTAssertEqual(RFC3339.format(RFC3339.range.lowerBound), "0001-01-01T00:00:00.000000Z")
        XCTAssertNotNil(RFC3339.parse(RFC3339.format(RFC3339.range.upperBound)))
        var g = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let t = Double(Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &g)) / 1000
            XCTAssertEqual(RFC3339.parse(RFC3339.format(t))!, t, accuracy: 1e-6)
        }
    }

    func testWireValues() {
        XCTAssertEqual(WireValues.encode(.date(0)), .string("1970-01-01T00:00:00.000000Z"))
        XCTAssertEqual(WireValues.encode(.json(#"{"a":[1,2]}"#)), ["a": [1, 2]])
        XCTAssertEqual(WireValues.encode(.binary([1, 2, 3])), .string("AQID"))
        XCTAssertEqual(try WireValues.decode(.string("AQID"), as: .binary).get(), .binary([1, 2, 3]))
        XCTAssertEqual(try WireValues.decode(["label": "a"], as: .json).get(), .json(#"{"label":"a"}"#))
        XCTAssertEqual(try WireValues.decode(3, as: .double).get(), .double(3))
        XCTAssertThrowsError(try WireValues.decode("three", as: .integer).get())
        XCTAssertThrowsError(try WireValues.decode("yesterday", as: .date).get())
    }

    /// Random bytes and random mutations of real messages through both decoders: every input
    /// either decodes or throws; nothing crashes.
    func testFuzzTheFrameAndMessageDecoders() {
        let iterations = Int(ProcessInfo.processInfo.environment["SEAM_FUZZ_ITERATIONS"] ?? "") ?? 5000
        var g = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["SEAM_FUZZ_SEED"] ?? "") ?? 42)
        let seeds = [#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","predicate":"timerUUID == $t","parameters":{"t":"0f8fad5b-d9cb-469f-a165-70867728950e"}},"more":false,"id":17}"#,
                     #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Timer","values":{"name":"Tea","steps":[{"label":"a","seconds":5}]}}]}}"#,
                     #"{"parameters":{"rows":[{"uuid":"x","startedAt":"2026-11-30T22:16:10.250000Z"}]},"continues":true,"id":"q"}"#]
        var decoded = 0, calls = 0
        for _ in 0..<iterations {
            var bytes = Array(seeds[Int(g.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<(1 + g.next() % 6) {
                let at = Int(g.next() % UInt64(bytes.count + 1))
                switch g.next() % 4 {
                case 0: if at < bytes.count { bytes[at] = UInt8(truncatingIfNeeded: g.next()) }
                case 1: bytes.insert(UInt8(truncatingIfNeeded: g.next()), at: at)
                case 2: if at < bytes.count { bytes.remove(at: at) }
                default: bytes.insert(contentsOf: bytes[..<min(at, bytes.count)].suffix(8), at: at)
                }
            }
            if g.next() % 8 == 0 { bytes = (0..<Int(g.next() % 64)).map { _ in UInt8(truncatingIfNeeded: g.next()) } }
            var decoder = FrameDecoder(maxFrameBytes: 512)
            decoder.append(bytes + [0])
            while let frame = try? decoder.next() {
                guard let json = try? JSON.decode(frame, limits: JSONLimits(maxDepth: Limits.maxJSONDepth)) else { continue }
                decoded += 1
                if (try? Call(json)) != nil { calls += 1 }
                _ = try? Reply(json)
            }
        }
        print("protocol fuzz: \(iterations) inputs, \(decoded) decoded as JSON, \(calls) as calls")
    }
}
