import Foundation
import SeamJSON

/// Benchmarks of the wire codec (issue: SeamJSON).
///
/// Per message, decode and encode with SeamJSON beside json-c (its own tree, and converted to
/// and from SeamJSON's value, which is what a json-c-backed SeamJSON would have to do) and beside
/// Foundation's `JSONSerialization` and `JSONDecoder`/`JSONEncoder` with Codable mirrors. Ratios
/// are the other codec's time over SeamJSON's: above 1× means SeamJSON is faster. A third table
/// times `JSONObject` lookups on both sides of its index threshold.
enum JSONBenchmarks {
    static var runs: Int { Bench.size(11, quick: 5) }

    static func run() throws {
        let messages = try JSONBenchmarkMessage.all()
        try decoding(messages)
        try encoding(messages)
        try lookups()
    }

    /// Enough repetitions that one timed run of a message takes a few milliseconds.
    private static func iterations(_ message: JSONBenchmarkMessage) -> Int {
        max(50, 1_000_000 / message.bytes.count)
    }

    /// The median time of one call of each body. The bodies take turns, run after run, so that a
    /// burst of load on this shared machine slows all of them rather than skewing their ratios.
    private static func perCall(_ iterations: Int, _ bodies: [() throws -> Void]) throws -> [Double] {
        var times = Array(repeating: [Double](), count: bodies.count)
        for _ in 0..<runs {
            for (which, body) in bodies.enumerated() {
                times[which] += try Harness.time(runs: 1) { for _ in 0..<iterations { try body() } }
            }
        }
        return times.map { Harness.median($0) / Double(iterations) }
    }

    @inline(never)
    private static func keep<T>(_ value: T) { withExtendedLifetime(value) {} }

    // MARK: - Decoding

    static func decoding(_ messages: [JSONBenchmarkMessage]) throws {
        var table = BenchTable(
            "json: decode per message",
            columns: [
                "message", "bytes", "SeamJSON", "json-c tree", "json-c → JSON", "JSONSerialization", "JSONDecoder",
                "JSONDecoder ÷ SeamJSON", "json-c tree ÷ SeamJSON",
            ])
        let tokener = try JSONCBaseline.Tokener()
        let decoder = JSONDecoder()
        var slowest = Double.infinity
        for message in messages {
            let n = iterations(message)
            let bytes = message.bytes
            let data = Data(bytes)
            guard try JSONCBaseline.value(tokener.parse(bytes)) == message.value else {
                throw JSONCBaseline.Failure(description: "json-c reads \(message.name) differently")
            }
            let times = try perCall(
                n,
                [
                    { keep(try JSON.decode(bytes)) },
                    { JSONCBaseline.free(try tokener.parse(bytes)) },
                    {
                        let tree = try tokener.parse(bytes)
                        keep(JSONCBaseline.value(tree))
                        JSONCBaseline.free(tree)
                    },
                    { keep(try JSONSerialization.jsonObject(with: data)) },
                    { keep(try message.decodeTyped(decoder, data)) },
                ])
            let (seam, jsonc, jsoncConverted, serialization, typed) = (times[0], times[1], times[2], times[3], times[4])
            slowest = min(slowest, typed / seam)
            table.add([
                message.name, "\(bytes.count)", Harness.duration(seam), Harness.duration(jsonc),
                Harness.duration(jsoncConverted), Harness.duration(serialization), Harness.duration(typed),
                Harness.ratio(typed, seam), Harness.ratio(jsonc, seam),
            ])
        }
        table.print()
        print("target: SeamJSON decodes ≥ 5× faster than JSONDecoder, every message")
        Figures.record("json.decode_speedup_over_foundation", slowest)
    }

    // MARK: - Encoding

    static func encoding(_ messages: [JSONBenchmarkMessage]) throws {
        var table = BenchTable(
            "json: encode per message",
            columns: [
                "message", "bytes", "SeamJSON", "json-c tree", "JSON → json-c", "JSONSerialization", "JSONEncoder",
                "JSONEncoder ÷ SeamJSON", "json-c tree ÷ SeamJSON",
            ])
        let encoder = JSONEncoder()
        var slowest = Double.infinity
        for message in messages {
            let n = iterations(message)
            let value = message.value
            let tree = try JSONCBaseline.tree(value)
            defer { JSONCBaseline.free(tree) }
            let object = try JSONSerialization.jsonObject(with: Data(message.bytes))
            let times = try perCall(
                n,
                [
                    { keep(value.encoded()) },
                    { keep(try JSONCBaseline.serialise(tree).count) },
                    {
                        let built = try JSONCBaseline.tree(value)
                        keep([UInt8](try JSONCBaseline.serialise(built)))
                        JSONCBaseline.free(built)
                    },
                    { keep(try JSONSerialization.data(withJSONObject: object)) },
                    { keep(try message.encodeTyped(encoder)) },
                ])
            let (seam, jsonc, jsoncConverted, serialization, typed) = (times[0], times[1], times[2], times[3], times[4])
            slowest = min(slowest, typed / seam)
            table.add([
                message.name, "\(message.bytes.count)", Harness.duration(seam), Harness.duration(jsonc),
                Harness.duration(jsoncConverted), Harness.duration(serialization), Harness.duration(typed),
                Harness.ratio(typed, seam), Harness.ratio(jsonc, seam),
            ])
        }
        table.print()
        print("target: SeamJSON encodes ≥ 5× faster than JSONEncoder, every message")
        Figures.record("json.encode_speedup_over_foundation", slowest)
    }

    // MARK: - Lookups

    /// Objects of n members: decoding them, and looking up every key once. Up to 32 members
    /// `JSONObject` scans; above, it hashes.
    static func lookups() throws {
        var table = BenchTable(
            "json: JSONObject of n members (scan up to 32, hash index above)",
            columns: ["members", "decode the object", "per lookup", "per lookup, Dictionary<String, JSON>"])
        let names = [
            "uuid", "timerUUID", "name", "icon", "colour", "steps", "repeatCount", "state", "startedAt", "pausedAt",
            "stepIndex", "round", "stepEndsAt", "finishedAt",
        ]
        for count in [4, 8, 14, 24, 32, 33, 64] {
            let keys = (0..<count).map { $0 < names.count ? names[$0] : "extra\($0)" }
            let text = "{" + keys.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
            let bytes = Array(text.utf8)
            guard let object = try JSON.decode(bytes).objectValue else { continue }
            let dictionary = Dictionary(uniqueKeysWithValues: object.map { ($0.key, $0.value) })
            let probes = keys.map { String(decoding: Array($0.utf8), as: UTF8.self) }  // not the stored strings
            let n = max(20, 20_000 / count)
            let times = try perCall(
                n,
                [
                    { keep(try JSON.decode(bytes)) },
                    { for key in probes { keep(object[key]) } },
                    { for key in probes { keep(dictionary[key]) } },
                ])
            let (decode, scan, hashed) = (times[0], times[1] / Double(count), times[2] / Double(count))
            table.add(["\(count)", Harness.duration(decode), Harness.duration(scan), Harness.duration(hashed)])
        }
        table.print()
    }
}
