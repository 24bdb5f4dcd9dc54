import SeamQuery
import SeamSchema

/// Random rows, predicates and sorts for `Fixtures.thing`, drawn from small pools of awkward
/// values (nil, empty text, U+0000, non-ASCII, canonically equivalent text, integers beyond
/// 2^53, ±0, ±infinity, NaN) so that comparisons often meet their edge cases.
struct RandomQueries {
    var rng: SeededGenerator

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    // MARK: - Pools

    static let textPieces = [
        "", "a", "A", "b", "B", "ab", "Ab", "aB", "abc", "z", "Z", "é", "e\u{301}", "É", "ß", "SS", "ss", "İ", "ı",
        "\u{212A}", "k", "_", "%", "*", "?", "[", "]", "\\", " ", "\u{0}", "😀", "a*b", "-", "0",
    ]
    static let integers: [Int64] = [
        .min, .min + 1, -(1 << 53) - 1, -(1 << 53), -1, 0, 1, 2, 3, 42, 1 << 53, (1 << 53) + 1, .max - 1, .max,
    ]
    static let doubles: [Double] = [
        -.infinity, -.greatestFiniteMagnitude, -9.3e18, -9_223_372_036_854_775_808.0, -9_007_199_254_740_992.0, -1.5,
        -0.0, 0.0, .leastNonzeroMagnitude, 0.5, 1, 2, 3, 42, 9_007_199_254_740_992.0, 9_007_199_254_740_994.0,
        9_223_372_036_854_775_808.0, .greatestFiniteMagnitude, .infinity,
    ]
    static let dates: [Double] = [0, -1, 1_796_032_800, 1_796_032_800.25, 1e10, -62_135_596_800]
    static let dateTexts = [
        "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2026-11-30T10:00:00Z", "2026-11-30T11:00:00.25+01:00",
    ]
    static let uuids = [
        "0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ]
    static let jsons = ["[]", "{}", "[1,2]", "[1, 2]", "{\"a\":1}", "null", ""]
    static let blobs: [[UInt8]] = [[], [0], [0, 0], [1], [1, 2], [255], [0x61]]
    static let likePieces = ["a", "A", "b", "é", "ß", "*", "?", "\\*", "\\?", "\\\\", "[", "]", "%", "_", "😀", ""]

    // MARK: - Choices

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func pick<T>(_ xs: [T]) -> T { xs[Int.random(in: 0..<xs.count, using: &rng)] }

    mutating func text() -> String {
        (0..<Int.random(in: 0...3, using: &rng)).map { _ in pick(Self.textPieces) }.joined()
    }

    mutating func likePattern() -> String {
        (0..<Int.random(in: 0...4, using: &rng)).map { _ in pick(Self.likePieces) }.joined()
    }

    // MARK: - Rows

    /// A row of `Fixtures.thing`; each optional attribute is nil one time in five.
    mutating func row() -> [String: AttributeValue] {
        var row: [String: AttributeValue] = ["uuid": .uuid(UUIDText.random(using: &rng))]
        for attribute in Fixtures.thing.attributes where attribute.name != "uuid" {
            row[attribute.name] = chance(0.2) ? .null : value(of: attribute.type)
        }
        return row
    }

    private mutating func value(of type: AttributeType) -> AttributeValue {
        switch type {
        case .string: return .string(text())
        case .integer:
            return chance(0.1) ? .double(Double(pick([-3, -0.0, 0, 3, 42] as [Double]))) : .integer(integer())
        case .double:
            if chance(0.05) { return .double(.nan) }
            return chance(0.1) ? .integer(integer()) : .double(pick(Self.doubles))
        case .date: return .date(pick(Self.dates))
        case .bool: return .bool(chance(0.5))
        case .uuid: return .uuid(pick(Self.uuids))
        case .json: return .json(pick(Self.jsons))
        case .binary: return .binary(pick(Self.blobs))
        }
    }

    private mutating func integer() -> Int64 {
        chance(0.7) ? pick(Self.integers) : Int64.random(in: -5...5, using: &rng)
    }

    // MARK: - Predicates

    /// Predicate text and the parameters it uses.
    mutating func predicate() -> (text: String, parameters: [String: AttributeValue]) {
        var parameters: [String: AttributeValue] = [:]
        let text = predicate(depth: 0, parameters: &parameters)
        return (text, parameters)
    }

    private mutating func predicate(depth: Int, parameters: inout [String: AttributeValue]) -> String {
        if depth >= 4 || chance(0.45) { return comparison(&parameters) }
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return "NOT " + group(depth: depth, parameters: &parameters)
        case 1: return "!" + group(depth: depth, parameters: &parameters)
        case 2: return pick(["TRUEPREDICATE", "FALSEPREDICATE"])
        default:
            let count = Int.random(in: 2...3, using: &rng)
            let parts = (0..<count).map { _ in group(depth: depth, parameters: &parameters) }
            var out = parts[0]
            for part in parts.dropFirst() { out += " \(pick(["AND", "OR", "&&", "||", "and", "or"])) " + part }
            return out
        }
    }

    private mutating func group(depth: Int, parameters: inout [String: AttributeValue]) -> String {
        chance(0.5) ? "(" + predicate(depth: depth + 1, parameters: &parameters) + ")" : comparison(&parameters)
    }

    private mutating func comparison(_ parameters: inout [String: AttributeValue]) -> String {
        let attribute = pick(Fixtures.thing.attributes)
        let name = attribute.name == "in" ? "#in" : attribute.name
        let type = attribute.type
        if chance(0.1) { return "\(name) \(pick(["==", "!="])) \(pick(["nil", "NULL"]))" }
        var ops = ["==", "!=", "IN"]
        if type != .bool && type != .json { ops += ["<", "<=", ">", ">=", "BETWEEN"] }
        if type == .string { ops += ["BEGINSWITH", "CONTAINS", "ENDSWITH", "LIKE", "LIKE"] }
        let op = pick(ops)
        let option = type == .string && chance(0.3) ? "[c]" : ""
        let negate = ["IN", "BETWEEN", "LIKE", "CONTAINS"].contains(op) && chance(0.15) ? "NOT " : ""
        switch op {
        case "IN":
            let values = (0..<Int.random(in: 0...4, using: &rng)).map { _ in value(for: type, op: op, &parameters) }
            return "\(name) \(negate)IN\(option) {\(values.joined(separator: ", "))}"
        case "BETWEEN":
            let low = value(for: type, op: op, &parameters)
            let high = value(for: type, op: op, &parameters)
            return "\(name) \(negate)BETWEEN\(option) {\(low), \(high)}"
        default:
            return "\(name) \(negate)\(op)\(option) \(value(for: type, op: op, &parameters))"
        }
    }

    /// A literal or parameter for an attribute of `type` used with `op`.
    private mutating func value(for type: AttributeType, op: String, _ parameters: inout [String: AttributeValue])
        -> String
    {
        let isText = ["BEGINSWITH", "CONTAINS", "ENDSWITH", "LIKE"].contains(op)
        if type == .binary || chance(0.25) {
            let name = "p\(parameters.count)"
            parameters[name] = parameterValue(for: type, op: op, allowNil: op != "LIKE" || chance(0.5))
            return "$" + name
        }
        if op == "IN" && chance(0.1) { return "nil" }
        switch type {
        case .string where op == "LIKE": return quoted(likePattern(), single: chance(0.3))
        case .string where isText:
            return quoted(text().replacingOccurrences(of: "\u{0}", with: chance(0.5) ? "" : "\u{0}"))
        case .string: return quoted(text(), single: chance(0.3))
        case .integer, .double: return numberLiteral()
        case .date:
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: return "date(\"\(pick(Self.dateTexts))\")"
            case 1: return "date(\(pick(Self.dates)))"
            default: return numberLiteral()
            }
        case .bool: return pick(["TRUE", "FALSE", "YES", "NO", "true"])
        case .uuid: return quoted(chance(0.3) ? pick(Self.uuids).uppercased() : pick(Self.uuids))
        case .json: return quoted(pick(Self.jsons))
        case .binary: return "nil"
        }
    }

    private mutating func numberLiteral() -> String {
        if chance(0.5) { return String(integer()) }
        let d = pick(Self.doubles.filter(\.isFinite))
        return chance(0.5) ? "\(d)" : String(format: "%.17g", d).replacingOccurrences(of: "inf", with: "1")
    }

    private mutating func parameterValue(for type: AttributeType, op: String, allowNil: Bool) -> AttributeValue {
        if allowNil && chance(0.1) { return .null }
        switch type {
        case .string: return .string(op == "LIKE" ? likePattern() : text())
        case .integer: return chance(0.5) ? .integer(integer()) : .double(pick(Self.doubles))
        case .double: return chance(0.5) ? .double(pick(Self.doubles)) : .integer(integer())
        case .date: return pick([.date(pick(Self.dates)), .integer(integer()), .double(pick(Self.doubles))])
        case .bool: return .bool(chance(0.5))
        case .uuid: return chance(0.5) ? .uuid(pick(Self.uuids)) : .string(pick(Self.uuids).uppercased())
        case .json: return chance(0.5) ? .json(pick(Self.jsons)) : .string(pick(Self.jsons))
        case .binary: return .binary(pick(Self.blobs))
        }
    }

    // MARK: - Sorts

    /// Sort text over one to three distinct attributes.
    mutating func sortText() -> String {
        var names = Fixtures.thing.attributes.map(\.name)
        names.shuffle(using: &rng)
        return names.prefix(Int.random(in: 0...3, using: &rng)).map { name in
            let shown = name == "in" ? "#in" : name
            let folded = Fixtures.thing.attribute(name)?.type == .string && chance(0.3) ? "[c]" : ""
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: return "-" + shown + folded
            case 1: return shown + folded + " DESC"
            case 2: return shown + folded + " asc"
            default: return shown + folded
            }
        }.joined(separator: ", ")
    }
}
