import SeamJSON

/// Random JSON values and byte-level mutations of their encodings, for the fuzz tests.
struct RandomDocuments {
    var random: SplitMix64

    /// Hand-written documents with what the encoder never writes: white space, `\u` escapes,
    /// surrogate pairs, exponents, `\/`.
    static let handWritten: [String] = [
        #" { "a" : [ 1 , -2.5e+3 , true , null ] , "b" : "\u00e9\ud83d\ude00\/\n" } "#,
        #"[0, -0, 0.0, 1E-7, 9223372036854775807, -9223372036854775808, 9223372036854775808]"#,
        #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","predicate":"timerUUID == $t"},"more":false,"id":17}"#,
        #"[[[[[]]]],{"":{"":{}}},"\u0000\u001f\"\\"]"#,
        "\t\r\n[\"caf\u{E9}\", \"\u{1F600}\", \"e\u{301}\"]\n",
    ]

    /// Bytes that steer mutations towards the parser's edges.
    static let interesting: [[UInt8]] =
        [
            "\"", "\\", "\\u", "\\uD800", "\\uDC00", "\\ud83d\\ude00", "{", "}", "[", "]", ",", ":", "-", "0", "01",
            ".", "e", "E+", "1e400", "9223372036854775808", "true", "null", " ", "\n",
        ].map { Array($0.utf8) } + [
            [0x00], [0x1F], [0x7F], [0x80], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF],
            [0xE2, 0x82],
        ]

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    // MARK: - Values

    mutating func value(depth: Int = 0) -> JSON {
        let kind = depth >= 4 ? random.below(5) : random.below(7)
        switch kind {
        case 0: return .null
        case 1: return .bool(random.below(2) == 0)
        case 2: return .integer(integer())
        case 3: return .double(double())
        case 4: return .string(string())
        case 5: return .array((0..<random.below(6)).map { _ in value(depth: depth + 1) })
        default: return .object(object(depth: depth + 1))
        }
    }

    private mutating func object(depth: Int) -> JSONObject {
        var object = JSONObject()
        let count = random.below(12) == 0 ? 40 : random.below(6)  // sometimes past the index threshold
        for _ in 0..<count { object[string(maxLength: 6)] = value(depth: depth) }
        return object
    }

    private mutating func integer() -> Int64 {
        switch random.below(4) {
        case 0: Int64(random.below(100)) - 50
        case 1: random.pick([.min, .max, 0, -1, 1 << 53, -(1 << 53)])
        default: Int64(bitPattern: random.next()) >> (random.next() % 64)
        }
    }

    private mutating func double() -> Double {
        switch random.below(3) {
        case 0: return Double(random.below(100_000)) / 64 - 500
        case 1: return random.pick([0.1, -0.0, 1e308, 5e-324, 1e16, 1e-7, 2.5, 1e22, 123_456_789])
        default:
            let bits = Double(bitPattern: random.next())
            return bits.isFinite ? bits : 0.5
        }
    }

    private static let alphabet: [String] = [
        "a", "b", "z", "K", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "\u{E9}", "e\u{301}",
        "\u{20AC}", "\u{FFFF}", "\u{1F600}", "\u{10FFFF}", "uuid", "timerUUID", "-",
    ]

    private mutating func string(maxLength: Int = 12) -> String {
        (0..<random.below(maxLength + 1)).map { _ in random.pick(Self.alphabet) }.joined()
    }

    // MARK: - Mutations

    /// A valid document: an encoded random value or a hand-written one.
    mutating func document() -> [UInt8] {
        random.below(5) == 0 ? Array(random.pick(Self.handWritten).utf8) : value().encoded()
    }

    /// `bytes` with one to four random edits.
    mutating func mutate(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        for _ in 0...random.below(4) {
            let at = random.below(bytes.count + 1)
            switch random.below(6) {
            case 0 where at < bytes.count: bytes[at] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.insert(contentsOf: random.pick(Self.interesting), at: at)
            case 2 where at < bytes.count: bytes.removeSubrange(at..<min(bytes.count, at + 1 + random.below(4)))
            case 3 where at < bytes.count:
                let end = min(bytes.count, at + 1 + random.below(16))
                bytes.insert(contentsOf: bytes[at..<end], at: random.below(bytes.count + 1))
            case 4: bytes.removeSubrange(at...)
            default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
            }
        }
        return bytes
    }
}
