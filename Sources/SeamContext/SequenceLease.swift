/// The text of a data directory's `sequence.lease` (`StoreLayout.sequenceLease`,
/// `Protocol/store-files.md`): the highest save sequence number that may have been told, and,
/// written at a clean close, each open store's own number as it closed.
///
/// ```
/// 1234
/// Cloud 1200
/// Local 1234
/// ```
///
/// Pure: `Context+Sequence` reads and writes the file.
public struct SequenceLease: Equatable, Sendable {
    /// No save number above it has been told.
    public var through: Int64
    /// Each store's own sequence number at a clean close. None while the stores are open: a
    /// lease without them was written by a run that did not close cleanly (or had no store open).
    public var stores: [String: Int64]

    /// The largest number a lease holds: every step taken past it stays far from overflow.
    public static let maxNumber: Int64 = 1 << 62

    public init(through: Int64, stores: [String: Int64] = [:]) {
        self.through = through
        self.stores = stores
    }

    /// Reads a lease's text: nil for anything else (no final newline, a number out of range,
    /// a store twice or above the first line, a stray space or character).
    public init?(text: String) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 2, lines.removeLast().isEmpty, let through = Self.number(lines[0]) else { return nil }
        var stores: [String: Int64] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }),
                  stores[String(parts[0])] == nil, let n = Self.number(parts[1]), n <= through else { return nil }
            stores[String(parts[0])] = n
        }
        self.init(through: through, stores: stores)
    }

    public var text: String {
        "\(through)\n" + stores.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
    }

    private static func number(_ s: Substring) -> Int64? {
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int64(s), n <= maxNumber else { return nil }
        return n
    }
}
