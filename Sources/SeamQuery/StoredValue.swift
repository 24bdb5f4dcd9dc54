import SeamSchema

/// A non-null value as SQLite stores it: one of its four storage classes.
///
/// This is where the one semantics lives. The in-memory evaluator, the sort comparator and the
/// channel index all compare `StoredValue`s with `compare(_:_:folded:)`, which follows SQLite's
/// rules exactly: numbers before text before blobs; integers and reals compared by exact value
/// (never through a lossy conversion); text and blobs by bytes, with `folded` applying ASCII
/// case folding to text first. The SQL compiler binds the same values, so SQLite sees what the
/// evaluator sees.
enum StoredValue: Sendable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The value a row holds for an attribute of `type`, as the store writes it; `nil` for null.
    ///
    /// Applies SQLite's column affinity to numbers: an integer in a REAL column (double, date)
    /// becomes a double, and a double with an exact integer value in an INTEGER column (integer,
    /// bool) becomes an integer. NaN is null, because SQLite stores NaN as NULL.
    @inline(__always)
    init?(_ value: AttributeValue, as type: AttributeType) {
        switch value {
        case .null: return nil
        case .string(let s), .uuid(let s), .json(let s): self = .text(s)
        case .binary(let b): self = .blob(b)
        case .bool(let b): self = Self.number(Int64(b ? 1 : 0), as: type)
        case .integer(let i): self = Self.number(i, as: type)
        case .double(let d), .date(let d):
            if d.isNaN { return nil }
            self = Self.number(d, as: type)
        }
    }

    private static func number(_ i: Int64, as type: AttributeType) -> StoredValue {
        type.hasRealAffinity ? .real(Double(i)) : .integer(i)
    }

    private static func number(_ d: Double, as type: AttributeType) -> StoredValue {
        if type.hasIntegerAffinity, let i = exactInteger(d) { return .integer(i) }
        return .real(d)
    }

    /// `d` as an Int64 when it is a whole number in range (-0.0 gives 0).
    static func exactInteger(_ d: Double) -> Int64? {
        guard d >= -9_223_372_036_854_775_808.0, d < 9_223_372_036_854_775_808.0, d == d.rounded(.towardZero) else {
            return nil
        }
        return Int64(d)
    }

    /// The value to bind for SQLite.
    var argument: AttributeValue {
        switch self {
        case .integer(let i): return .integer(i)
        case .real(let d): return .double(d)
        case .text(let s): return .string(s)
        case .blob(let b): return .binary(b)
        }
    }

    // MARK: - Comparison

    /// -1, 0 or 1 as `a` sorts before, with or after `b` under SQLite's rules.
    ///
    /// `folded` folds ASCII case in text (as `lower()` does on both sides); it has no effect on
    /// other classes.
    static func compare(_ a: StoredValue, _ b: StoredValue, folded: Bool = false) -> Int {
        // Nested switches rather than one over a tuple: a tuple would copy (and retain) both payloads.
        switch a {
        case .integer(let x):
            if case .integer(let y) = b { return x < y ? -1 : (x > y ? 1 : 0) }
            if case .real(let y) = b { return compare(x, y) }
        case .real(let x):
            if case .real(let y) = b { return x < y ? -1 : (x > y ? 1 : 0) }
            if case .integer(let y) = b { return -compare(y, x) }
        case .text(let x):
            if case .text(let y) = b { return ByteOrder.compare(x, y, folded: folded) }
        case .blob(let x):
            if case .blob(let y) = b { return ByteOrder.compare(x, y) }
        }
        return a.classRank < b.classRank ? -1 : 1
    }

    /// Whether `a` equals `b` under `compare`.
    static func equal(_ a: StoredValue, _ b: StoredValue, folded: Bool = false) -> Bool {
        compare(a, b, folded: folded) == 0
    }

    /// Compares an integer with a double exactly, as SQLite's `sqlite3IntFloatCompare` does.
    static func compare(_ i: Int64, _ d: Double) -> Int {
        if d >= 9_223_372_036_854_775_808.0 { return -1 }
        if d < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = d.rounded(.towardZero)
        let w = Int64(whole)
        if i != w { return i < w ? -1 : 1 }
        let fraction = d - whole
        return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0)
    }

    /// SQLite's order of storage classes: numbers, then text, then blobs (NULL, first of all,
    /// is handled by callers).
    private var classRank: Int {
        switch self {
        case .integer, .real: return 0
        case .text: return 1
        case .blob: return 2
        }
    }

    /// The value with ASCII case folded when it is text.
    var folded: StoredValue {
        if case .text(let s) = self { return .text(ASCII.lowercased(s)) }
        return self
    }
}

extension AttributeType {
    /// INTEGER affinity: SQLite turns whole doubles into integers on the way in.
    var hasIntegerAffinity: Bool { self == .integer || self == .bool }
    /// REAL affinity: SQLite turns integers into doubles on the way in.
    var hasRealAffinity: Bool { self == .double || self == .date }
}

/// Byte-wise comparison of text (SQLite's BINARY collation) and of blobs, without allocating.
enum ByteOrder {
    static func compare(_ a: String, _ b: String, folded: Bool) -> Int {
        var a = a
        var b = b
        return a.withUTF8 { pa in b.withUTF8 { pb in compare(pa, pb, folded: folded) } }
    }

    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in compare(pa, pb, folded: false) } }
    }

    /// memcmp over the common length, then the shorter first: SQLite's BINARY order.
    static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, folded: Bool) -> Int {
        let n = min(a.count, b.count)
        var i = 0
        while i < n {
            let x = folded ? ASCII.fold(a[i]) : a[i]
            let y = folded ? ASCII.fold(b[i]) : b[i]
            if x != y { return x < y ? -1 : 1 }
            i += 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}
