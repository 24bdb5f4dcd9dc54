/// The short form of a uuid that people read and type: its last eight hex digits.
///
/// Keys made by seamd are time-ordered (UUIDv7): rows made within the same minute share their
/// first eight digits, so the start of a uuid no longer tells rows apart. Its end is random in
/// every version, so that is what listings show; what a person types is matched against either
/// end (`ShortID.matches`), so a uuid prefix copied from an older listing still works.
public enum ShortID {
    /// The digits a listing shows for `uuid`.
    public static func of(_ uuid: String) -> String { String(uuid.suffix(8)) }

    /// The fewest characters a typed short id must have.
    public static let minimumLength = 4

    /// Whether `typed` (lowercased, at least `minimumLength` characters) is the start or the end of `uuid`.
    public static func matches(_ typed: String, _ uuid: String) -> Bool {
        typed.count >= minimumLength && (uuid.hasSuffix(typed) || uuid.hasPrefix(typed))
    }
}
