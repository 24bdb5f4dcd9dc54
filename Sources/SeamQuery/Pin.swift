import SeamSchema

/// A value a predicate pins an attribute to: every row it matches has that value there.
///
/// Extracted from the checked tree: `a == v` pins `(a, v)`, `a IN {…}` pins each value, `a == nil`
/// pins nil; AND keeps the pins of one operand (the most selective), OR the union of all its
/// operands' pins (only when every operand pins something). A predicate with no pins is
/// scanned; one whose pins are empty (`FALSEPREDICATE`) matches nothing and is never a candidate.
struct Pin: Sendable, Hashable {
    let field: Field
    let key: IndexKey

    /// An attribute, and whether it is compared with ASCII case folded (`==[c]`).
    struct Field: Sendable, Hashable {
        let column: Column
        let folded: Bool

        /// The key `row` has in this field.
        @inline(__always)
        func key(in row: [String: AttributeValue]) -> IndexKey {
            IndexKey(column.value(in: row), folded: folded)
        }
    }

    /// The pins of `node`: `nil` when it pins nothing (a row with any values may match).
    static func pins(of node: CheckedNode) -> [Pin]? {
        switch node {
        case .constant(let b):
            return b ? nil : []
        case .isNull(let c):
            return [Pin(field: Field(column: c, folded: false), key: .null)]
        case .compare(let c, .equal, let v, let folded):
            return [Pin(field: Field(column: c, folded: folded), key: IndexKey(v, folded: folded))]
        case .inList(let c, let values, let includesNull, let folded):
            var out = values.map { Pin(field: Field(column: c, folded: folded), key: IndexKey($0, folded: folded)) }
            if includesNull { out.append(Pin(field: Field(column: c, folded: false), key: .null)) }
            return unique(out)
        case .not(.not(let inner)):
            return pins(of: inner)
        case .and(let nodes):
            return mostSelective(nodes.compactMap(pins(of:)))
        case .or(let nodes):
            var out: [Pin] = []
            for n in nodes {
                guard let p = pins(of: n) else { return nil }
                out += p
            }
            return unique(out)
        default:
            return nil
        }
    }

    /// Of several alternative pin sets (any one suffices), the one likely to match fewest rows:
    /// prefer uuid attributes (identities and links), avoid bool and nil pins, then fewest pins.
    private static func mostSelective(_ sets: [[Pin]]) -> [Pin]? {
        sets.min { cost($0) < cost($1) }
    }

    private static func cost(_ pins: [Pin]) -> (Int, Int) {
        let rank =
            pins.map { pin -> Int in
                if pin.key == .null || pin.field.column.type == .bool { return 2 }
                return pin.field.column.type == .uuid ? 0 : 1
            }.max() ?? 0
        return (rank, pins.count)
    }

    private static func unique(_ pins: [Pin]) -> [Pin] {
        var seen: Set<Pin> = []
        return pins.filter { seen.insert($0).inserted }
    }
}

/// A hashable key for a value with the same equality as `StoredValue.equal`: numbers by exact
/// value (an integral double is keyed as the integer), text and blobs by bytes.
///
/// Text that is a canonical (lowercase) UUID is keyed by its 128 bits: the two forms correspond
/// one to one, and a key without a heap string keeps large indexes compact and cache-friendly.
enum IndexKey: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case uuid(UInt64, UInt64)
    case text(ByteString)
    case blob([UInt8])

    init(_ value: StoredValue?, folded: Bool) {
        switch value {
        case nil: self = .null
        case .integer(let i)?: self = .integer(i)
        case .real(let d)?: self = StoredValue.exactInteger(d).map(IndexKey.integer) ?? .real(d)
        case .text(let s)?: self = Self.text(folded ? ASCII.lowercased(s) : s)
        case .blob(let b)?: self = .blob(b)
        }
    }

    private static func text(_ s: String) -> IndexKey {
        if let bits = UUIDText.bits(s) { return .uuid(bits.high, bits.low) }
        return .text(ByteString(s))
    }
}

/// A string compared and hashed by its UTF-8 bytes (Swift's `String` equality would treat
/// canonically equivalent text as equal, which SQLite does not).
struct ByteString: Sendable, Hashable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (a: ByteString, b: ByteString) -> Bool {
        a.text.utf8.count == b.text.utf8.count && ByteOrder.compare(a.text, b.text, folded: false) == 0
    }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(text.utf8.count)
    }
}
