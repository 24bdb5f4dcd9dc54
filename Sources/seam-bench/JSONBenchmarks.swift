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
    static let runs = 7

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

    /// The median time of one call of `body`.
    private static func perCall(_ iterations: Int, _ body: () throws -> Void) rethrows -> Double {
        Harness.median(try Harness.time(runs: runs) { for _ in 0..<iterations { try body() } }) / Double(iterations)
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
        for message in messages {
            let n = iterations(message)
            let bytes = message.bytes
            let data = Data(bytes)
            guard try JSONCBaseline.value(tokener.parse(bytes)) == message.value || message.name.contains("doubles") else {
                throw JSONCBaseline.Failure(description: "json-c reads \(message.name) differently")
            }
            let seam = try perCall(n) { keep(try JSON.decode(bytes)) }
            let jsonc = try perCall(n) { JSONCBaseline.free(try tokener.parse(bytes)) }
            let jsoncConverted = try perCall(n) {
                let tree = try tokener.parse(bytes)
                keep(JSONCBaseline.value(tree))
                JSONCBaseline.free(tree)
            }
            let serialization = try perCall(n) { keep(try JSONSerialization.jsonObject(with: data)) }
            let typed = try perCall(n) { keep(try message.decodeTyped(decoder, data)) }
            table.add([
                message.name, "\(bytes.count)", Harness.duration(seam), Harness.duration(jsonc),
                Harness.duration(jsoncConverted), Harness.duration(serialization), Harness.duration(typed),
                Harness.ratio(typed, seam), Harness.ratio(jsonc, seam),
            ])
        }
        table.print()
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
        for message in messages {
            let n = iterations(message)
            let value = message.value
            let tree = try JSONCBaseline.tree(value)
            defer { JSONCBaseline.free(tree) }
            let object = try JSONSerialization.jsonObject(with: Data(message.bytes))
            let seam = perCall(n) { keep(value.encoded()) }
            let jsonc = try perCall(n) { keep(try JSONCBaseline.serialise(tree).count) }
            let jsoncConverted = try perCall(n) {
                let built = try JSONCBaseline.tree(value)
                keep([UInt8](try JSONCBaseline.serialise(built)))
                JSONCBaseline.free(built)
            }
            let serialization = try perCall(n) { keep(try JSONSerialization.data(withJSONObject: object)) }
            let typed = try perCall(n) { keep(try message.encodeTyped(encoder)) }
            table.add([
                message.name, "\(message.bytes.count)", Harness.duration(seam), Harness.duration(jsonc),
                Harness.duration(jsoncConverted), Harness.duration(serialization), Harness.duration(typed),
                Harness.ratio(typed, seam), Harness.ratio(jsonc, seam),
            ])
        }
        table.print()
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
            let decode = try perCall(n) { keep(try JSON.decode(bytes)) }
            let scan = perCall(n) { for key in probes { keep(object[key]) } } / Double(count)
            let hashed = perCall(n) { for key in probes { keep(dictionary[key]) } } / Double(count)
            table.add(["\(count)", Harness.duration(decode), Harness.duration(scan), Harness.duration(hashed)])
        }
        table.print()
    }
}
