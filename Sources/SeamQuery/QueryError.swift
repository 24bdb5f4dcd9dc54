/// Why a predicate or sort text was refused: what kind of problem, where, and what to do.
///
/// `offset` is a UTF-8 byte offset into the text that was given (0 when the problem is not at a
/// place, such as an entity that does not exist). `kind.rawValue` is stable and is what the wire
/// protocol carries; `message` is for people and may change.
public struct QueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A kind of problem. New kinds may be added; match the ones you handle and keep a default.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // MARK: Text
        /// The text is longer than `QueryLimits.maxSourceBytes`.
        public static let tooLong = Kind(rawValue: "tooLong")
        /// The bytes are not valid UTF-8.
        public static let invalidUTF8 = Kind(rawValue: "invalidUTF8")
        /// A character that starts no token (outside a string literal).
        public static let unexpectedCharacter = Kind(rawValue: "unexpectedCharacter")
        /// A string literal without its closing quote.
        public static let unterminatedString = Kind(rawValue: "unterminatedString")
        /// A backslash escape the language does not define.
        public static let invalidEscape = Kind(rawValue: "invalidEscape")
        /// A malformed number such as `1.` or `12abc`.
        public static let invalidNumber = Kind(rawValue: "invalidNumber")
        /// An integer beyond 64 bits or a decimal beyond the range of a double.
        public static let numberOutOfRange = Kind(rawValue: "numberOutOfRange")

        // MARK: Syntax
        /// The text holds nothing but white space.
        public static let emptyPredicate = Kind(rawValue: "emptyPredicate")
        /// A token where another was expected.
        public static let unexpectedToken = Kind(rawValue: "unexpectedToken")
        /// The text ends where more was expected.
        public static let unexpectedEnd = Kind(rawValue: "unexpectedEnd")
        /// A `(` or `{` that is never closed, or a `)` that closes nothing.
        public static let unbalancedParentheses = Kind(rawValue: "unbalancedParentheses")
        /// An operator the language does not have (`=~`, `MATCHES`, `ANY`, arithmetic …).
        public static let unknownOperator = Kind(rawValue: "unknownOperator")
        /// An option in brackets other than `[c]`.
        public static let invalidOption = Kind(rawValue: "invalidOption")
        /// A `date(…)` that is not RFC 3339 or a number of seconds.
        public static let invalidDate = Kind(rawValue: "invalidDate")

        // MARK: Bounds (see `QueryLimits`)
        public static let tooDeep = Kind(rawValue: "tooDeep")
        public static let listTooLong = Kind(rawValue: "listTooLong")
        public static let tooManyComparisons = Kind(rawValue: "tooManyComparisons")
        public static let tooManyValues = Kind(rawValue: "tooManyValues")
        public static let patternTooLong = Kind(rawValue: "patternTooLong")

        // MARK: Meaning
        /// No entity of that name in the schema version.
        public static let unknownEntity = Kind(rawValue: "unknownEntity")
        /// No attribute of that name in the entity.
        public static let unknownAttribute = Kind(rawValue: "unknownAttribute")
        /// A value of a type the attribute cannot be compared with (including misplaced `nil`).
        public static let typeMismatch = Kind(rawValue: "typeMismatch")
        /// An operator that does not apply to the attribute's type (`CONTAINS` on a number …).
        public static let operatorNotApplicable = Kind(rawValue: "operatorNotApplicable")
        /// A value of the right type that is still unusable (a malformed uuid, NaN, …).
        public static let invalidValue = Kind(rawValue: "invalidValue")
        /// A `$name` with no value among the parameters.
        public static let missingParameter = Kind(rawValue: "missingParameter")
        /// A parameter whose value has a type the attribute cannot be compared with.
        public static let parameterTypeMismatch = Kind(rawValue: "parameterTypeMismatch")
        /// An attribute named twice in one sort.
        public static let duplicateSortKey = Kind(rawValue: "duplicateSortKey")
        /// A predicate checked against another entity than the one it is used with.
        public static let entityMismatch = Kind(rawValue: "entityMismatch")
    }

    public var kind: Kind
    /// UTF-8 byte offset of the problem in the text.
    public var offset: Int
    /// What is wrong and what to do about it.
    public var message: String

    public init(_ kind: Kind, at offset: Int, _ message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(kind) at byte \(offset): \(message)" }
}
