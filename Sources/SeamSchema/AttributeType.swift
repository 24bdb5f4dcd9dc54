/// The storage type of an attribute.
///
/// The raw value is the name used in canonical JSON and in the wire protocol; it never changes.
public enum AttributeType: String, Sendable, Hashable, CaseIterable, Codable {
    /// UTF-8 text.
    case string
    /// A signed 64-bit integer.
    case integer
    /// An IEEE 754 binary64 number.
    case double
    /// `true` or `false` (stored as 0 or 1).
    case bool
    /// A point in time: Unix seconds (REAL) on disk, RFC 3339 on the wire.
    case date
    /// A lowercase RFC 4122 UUID in text form.
    case uuid
    /// Raw bytes.
    case binary
    /// A JSON value, stored as JSON text.
    case json

    /// The SQLite column type this attribute is declared with.
    public var sqlType: String {
        switch self {
        case .string, .uuid, .json: return "TEXT"
        case .integer, .bool: return "INTEGER"
        case .double, .date: return "REAL"
        case .binary: return "BLOB"
        }
    }
}
