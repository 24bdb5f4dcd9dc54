/// Why bytes were refused as JSON: what kind of problem, and the byte where it was found.
///
/// `offset` counts bytes from the start of the buffer given to `JSON.decode` (for an
/// `ArraySlice`, from the slice's first byte). `kind.rawValue` is stable and may be sent over the
/// wire; `message` is for people and may change.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A kind of problem. New kinds may be added; match the ones you handle and keep a default.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // MARK: Structure
        /// The bytes end inside a value (including an empty buffer and an unclosed string).
        public static let unexpectedEnd = Kind(rawValue: "unexpectedEnd")
        /// A byte that cannot stand where it is: not a value, or not the `,` `:` `]` `}` expected.
        public static let unexpectedCharacter = Kind(rawValue: "unexpectedCharacter")
        /// Something other than white space follows the value.
        public static let trailingCharacters = Kind(rawValue: "trailingCharacters")
        /// An object names the same key twice (keys are compared by their UTF-8 bytes).
        public static let duplicateKey = Kind(rawValue: "duplicateKey")

        // MARK: Strings
        /// Bytes that are not well-formed UTF-8: a stray continuation byte, an overlong form,
        /// a surrogate encoded in UTF-8, a code point above U+10FFFF, or a truncated sequence.
        public static let invalidUTF8 = Kind(rawValue: "invalidUTF8")
        /// A byte below 0x20 inside a string; it must be escaped.
        public static let controlCharacter = Kind(rawValue: "controlCharacter")
        /// A backslash escape JSON does not define, or `\u` without four hex digits.
        public static let invalidEscape = Kind(rawValue: "invalidEscape")
        /// A `\u` escape of a surrogate that is not half of a high–low pair.
        public static let unpairedSurrogate = Kind(rawValue: "unpairedSurrogate")

        // MARK: Numbers
        /// A number JSON does not allow: `-`, `01`, `1.`, `1e`, `1.e5`.
        public static let invalidNumber = Kind(rawValue: "invalidNumber")
        /// A number too large in magnitude for a `Double` (such as `1e309`).
        public static let numberOutOfRange = Kind(rawValue: "numberOutOfRange")

        // MARK: Limits (see `JSONLimits`)
        /// The buffer is longer than `JSONLimits.maxBytes`.
        public static let tooLarge = Kind(rawValue: "tooLarge")
        /// More than `JSONLimits.maxDepth` arrays and objects are open at once.
        public static let tooDeep = Kind(rawValue: "tooDeep")
        /// A string decodes to more than `JSONLimits.maxStringBytes` bytes.
        public static let stringTooLong = Kind(rawValue: "stringTooLong")
        /// An array or object has more than `JSONLimits.maxMembers` elements.
        public static let tooManyMembers = Kind(rawValue: "tooManyMembers")
    }

    public var kind: Kind
    /// Byte offset of the problem from the start of the input.
    public var offset: Int
    /// What is wrong, in words.
    public var message: String

    public init(_ kind: Kind, at offset: Int, _ message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    public var description: String { "invalid JSON at byte \(offset): \(message) (\(kind))" }
}
