import Foundation
import SeamJSON

/// The broker messages the JSON benchmarks encode and decode, each with a Codable mirror so that
/// Foundation's `JSONDecoder`/`JSONEncoder` do the same work in their own way.
struct JSONBenchmarkMessage {
    let name: String
    let value: JSON
    let bytes: [UInt8]
    let decodeTyped: (JSONDecoder, Data) throws -> Any
    let encodeTyped: (JSONEncoder) throws -> Data

    /// A message whose Codable mirror is `T`; fails when the mirror does not read the message.
    static func make<T: Codable>(_ name: String, _ value: JSON, as type: T.Type) throws -> JSONBenchmarkMessage {
        let bytes = value.encoded()
        let typed = try JSONDecoder().decode(T.self, from: Data(bytes))
        return JSONBenchmarkMessage(
            name: name, value: value, bytes: bytes,
            decodeTyped: { decoder, data in try decoder.decode(T.self, from: data) },
            encodeTyped: { encoder in try encoder.encode(typed) })
    }

    /// A varlink call, a reply with one `Session` row, one with 100 rows, and one with 100
    /// doubles of 17 significant digits (the slow case of both number paths).
    static func all() throws -> [JSONBenchmarkMessage] {
        let call: JSON = [
            "method": "org.seam.Store.Fetch",
            "parameters": [
                "entity": "Session", "predicate": "timerUUID == $t", "parameters": ["t": .string(uuid(1))],
            ],
            "more": false,
            "id": 17,
        ]
        let values = (1...100).map { JSON.double(Double($0) / 7) }
        return [
            try make("call (Fetch)", call, as: FetchCall.self),
            try make("reply, 1 row of 14 attributes", rows(1), as: RowsReply.self),
            try make("reply, 100 rows", rows(100), as: RowsReply.self),
            try make("reply, 100 doubles", ["parameters": ["values": .array(values)], "id": 17], as: ValuesReply.self),
        ]
    }

    private static func rows(_ count: Int) -> JSON {
        ["parameters": ["sequence": 4711, "rows": .array((0..<count).map(row))], "id": 17]
    }

    /// A running session as the broker sends it: dates as RFC 3339 text, `steps` as JSON.
    private static func row(_ i: Int) -> JSON {
        [
            "uuid": .string(uuid(1000 + i)),
            "timerUUID": .string(uuid(i % 7)),
            "name": i % 3 == 0 ? "Green tea \u{2014} second steep" : "Tea",
            "icon": "cup.and.saucer",
            "colour": "#3a7bd5",
            "steps": [["label": "Steep", "seconds": 180], ["label": "Rest", "seconds": 60]],
            "repeatCount": 1,
            "state": "running",
            "startedAt": "2026-03-01T09:15:02.125Z",
            "pausedAt": nil,
            "stepIndex": .integer(Int64(i % 2)),
            "round": 1,
            "stepEndsAt": "2026-03-01T09:18:02.125Z",
            "finishedAt": nil,
        ]
    }

    /// A lowercase uuid made from `n`, the same every run.
    private static func uuid(_ n: Int) -> String {
        var bits = UInt64(n) &* 0x9E37_79B9_7F4A_7C15
        var hex = ""
        for _ in 0..<2 {
            bits = (bits ^ (bits >> 31)) &* 0xBF58_476D_1CE4_E5B9
            let digits = String(bits, radix: 16)
            hex += String(repeating: "0", count: 16 - digits.count) + digits
        }
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }
}

// MARK: - Codable mirrors

struct FetchCall: Codable {
    struct Parameters: Codable {
        let entity: String
        let predicate: String
        let parameters: [String: String]
    }
    let method: String
    let parameters: Parameters
    let more: Bool
    let id: Int
}

struct RowsReply: Codable {
    struct Parameters: Codable {
        let sequence: Int
        let rows: [SessionRow]
    }
    let parameters: Parameters
    let id: Int
}

/// The `Session` entity's 14 attributes. (The synthesised `encode(to:)` leaves out nil members
/// rather than writing `null`, which spares `JSONEncoder` a little work.)
struct SessionRow: Codable {
    struct Step: Codable {
        let label: String
        let seconds: Int
    }
    let uuid: String
    let timerUUID: String?
    let name: String
    let icon: String
    let colour: String
    let steps: [Step]
    let repeatCount: Int
    let state: String
    let startedAt: String
    let pausedAt: String?
    let stepIndex: Int
    let round: Int
    let stepEndsAt: String?
    let finishedAt: String?
}

struct ValuesReply: Codable {
    struct Parameters: Codable {
        let values: [Double]
    }
    let parameters: Parameters
    let id: Int
}
