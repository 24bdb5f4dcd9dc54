/// The syntax tree of a predicate, as parsed: before names and types are checked.
///
/// Every node carries its source range so that the checker can point at it. `description` renders
/// the tree as canonical predicate text that parses back to the same tree (ranges aside).
public indirect enum PredicateNode: Sendable, Hashable {
    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    case constant(Bool, SourceRange)
    /// `NOT p` or `! p`; the range covers the operator and its operand.
    case not(PredicateNode, SourceRange)
    /// Two or more operands joined by `AND`/`&&`, in source order.
    case and([PredicateNode])
    /// Two or more operands joined by `OR`/`||`, in source order.
    case or([PredicateNode])
    /// `attribute op operand`.
    case comparison(Comparison)

    /// An attribute compared with a value, a list or a range.
    public struct Comparison: Sendable, Hashable {
        public var attribute: String
        public var attributeRange: SourceRange
        public var op: Operator
        public var opRange: SourceRange
        /// The `[c]` option: fold ASCII case before comparing.
        public var caseInsensitive: Bool
        public var operand: Operand

        public init(
            attribute: String, attributeRange: SourceRange, op: Operator, opRange: SourceRange,
            caseInsensitive: Bool, operand: Operand
        ) {
            self.attribute = attribute
            self.attributeRange = attributeRange
            self.op = op
            self.opRange = opRange
            self.caseInsensitive = caseInsensitive
            self.operand = operand
        }
    }

    /// A comparison operator; the raw value is its canonical spelling.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case `in` = "IN"
        case between = "BETWEEN"
        case beginsWith = "BEGINSWITH"
        case contains = "CONTAINS"
        case endsWith = "ENDSWITH"
        case like = "LIKE"

        /// Whether the operator matches text (and so applies only to string attributes).
        var isTextMatch: Bool { [.beginsWith, .contains, .endsWith, .like].contains(self) }
        /// Whether the operator needs an order on values.
        var isOrdering: Bool { [.less, .lessOrEqual, .greater, .greaterOrEqual, .between].contains(self) }
    }

    /// What an attribute is compared with: one value, an `IN` list, or a `BETWEEN` range.
    public enum Operand: Sendable, Hashable {
        case value(Value)
        case list([Value], SourceRange)
        case range(Value, Value, SourceRange)
    }

    /// A literal or a parameter, with where it is written.
    public struct Value: Sendable, Hashable {
        public enum Kind: Sendable, Hashable {
            case null
            case bool(Bool)
            case integer(Int64)
            case double(Double)
            case string(String)
            /// `date(…)`, as Unix seconds.
            case date(Double)
            /// `$name`, resolved when the predicate is checked.
            case parameter(String)
        }

        public var kind: Kind
        public var range: SourceRange

        public init(_ kind: Kind, _ range: SourceRange) {
            self.kind = kind
            self.range = range
        }
    }

    /// The source range the node covers.
    public var range: SourceRange {
        switch self {
        case .constant(_, let r), .not(_, let r): return r
        case .and(let ps), .or(let ps):
            return ps.dropFirst().reduce(ps.first?.range ?? SourceRange(0, 0)) { $0.union($1.range) }
        case .comparison(let c): return c.attributeRange.union(c.operand.range)
        }
    }
}

extension PredicateNode.Operand {
    public var range: SourceRange {
        switch self {
        case .value(let v): return v.range
        case .list(_, let r), .range(_, _, let r): return r
        }
    }
}

// MARK: - Canonical text

extension PredicateNode: CustomStringConvertible {
    /// Canonical predicate text: keywords in capitals, `==`-style operators, strings in double
    /// quotes with minimal escapes, dates as `date(seconds)`, parentheses only where needed (so
    /// that the text never nests deeper than the source it came from).
    public var description: String {
        switch self {
        case .constant(let b, _): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let p, _): return "NOT " + p.operandText
        case .and(let ps): return ps.map { $0.isOr ? "(\($0))" : $0.description }.joined(separator: " AND ")
        case .or(let ps): return ps.map(\.description).joined(separator: " OR ")
        case .comparison(let c): return c.description
        }
    }

    private var isOr: Bool { if case .or = self { return true } else { return false } }

    /// The text of `self` as the operand of `NOT`.
    private var operandText: String {
        switch self {
        case .and, .or: return "(\(self))"
        default: return description
        }
    }
}

extension PredicateNode.Comparison: CustomStringConvertible {
    public var description: String {
        let name = Keyword.written(attribute: attribute)
        let op = self.op.rawValue + (caseInsensitive ? "[c]" : "")
        switch operand {
        case .value(let v): return "\(name) \(op) \(v)"
        case .list(let vs, _): return "\(name) \(op) {\(vs.map(\.description).joined(separator: ", "))}"
        case .range(let lo, let hi, _): return "\(name) \(op) {\(lo), \(hi)}"
        }
    }
}

extension PredicateNode.Value: CustomStringConvertible {
    public var description: String {
        switch kind {
        case .null: return "nil"
        case .bool(let b): return b ? "TRUE" : "FALSE"
        case .integer(let i): return String(i)
        case .double(let d): return Self.doubleText(d)
        case .string(let s): return Self.quoted(s)
        case .date(let d): return "date(\(Self.doubleText(d)))"
        case .parameter(let p): return "$" + p
        }
    }

    /// Shortest text that reads back as the same double, always with a '.' or an exponent.
    static func doubleText(_ d: Double) -> String {
        let text = d.description
        return text.contains(where: { $0 == "." || $0 == "e" }) ? text : text + ".0"
    }

    /// `s` in double quotes, escaping `"`, `\` and control characters.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\0": out += "\\0"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
