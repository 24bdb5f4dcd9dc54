/// Bounds on what `JSON.decode` accepts, so that a hostile peer cannot make the broker
/// recurse, allocate or hash without end.
///
/// The caller should also refuse a frame longer than `maxBytes` before buffering it; the decoder
/// checks it again for callers that hold the bytes already.
public struct JSONLimits: Sendable, Hashable {
    /// The longest input, in bytes.
    public var maxBytes: Int
    /// The most arrays and objects open at once; `[[1]]` has depth 2, a scalar depth 0.
    public var maxDepth: Int
    /// The longest string (a value or a key) after escapes are decoded, in UTF-8 bytes.
    public var maxStringBytes: Int
    /// The most elements in one array or members in one object.
    public var maxMembers: Int
    /// Whether a number too large for a double reads as `null` rather than failing the whole
    /// input: for reading what else a frame that failed for one holds (its call's id).
    public var outOfRangeNumbersAsNull = false

    public init(
        maxBytes: Int = 16 << 20,
        maxDepth: Int = 64,
        maxStringBytes: Int = 8 << 20,
        maxMembers: Int = 1 << 20
    ) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
        self.maxMembers = maxMembers
    }

    /// 16 MiB of input, depth 64, strings up to 8 MiB, up to 1,048,576 elements per container.
    public static let `default` = JSONLimits()
}
