/// Decoding from and encoding to bytes: the wire codec.
extension JSON {
    // MARK: - Decoding

    /// Decodes one JSON text (RFC 8259, strictly): white space may surround the value, nothing
    /// else may follow it.
    ///
    /// Refused, with the byte offset of the problem: invalid UTF-8 anywhere (overlong forms,
    /// surrogates, code points above U+10FFFF), control characters in strings, unknown escapes and
    /// unpaired surrogate escapes, numbers outside the grammar (`01`, `1.`, `.5`, `+1`, `-`) or
    /// beyond `Double` (`1e309`), `NaN`/`Infinity`, duplicate keys, and anything over `limits`.
    /// A byte-order mark is not white space and is refused too.
    ///
    /// - Complexity: O(n) in the input, plus hashing for objects of more than 32 members.
    public static func decode(
        _ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default
    ) throws(JSONError) -> JSON {
        try JSONParser.parse(bytes, limits: limits)
    }

    /// Decodes the bytes of an array; see `decode(_:limits:)` for the rules.
    public static func decode(_ bytes: [UInt8], limits: JSONLimits = .default) throws(JSONError) -> JSON {
        try bytes.withUnsafeBytes { buffer in parse(buffer, limits) }.get()
    }

    /// Decodes the bytes of a slice; error offsets count from the slice's first byte.
    public static func decode(_ bytes: ArraySlice<UInt8>, limits: JSONLimits = .default) throws(JSONError) -> JSON {
        try bytes.withUnsafeBytes { buffer in parse(buffer, limits) }.get()
    }

    /// Decodes the UTF-8 of a string; see `decode(_:limits:)` for the rules.
    public static func decode(_ text: String, limits: JSONLimits = .default) throws(JSONError) -> JSON {
        var text = text
        return try text.withUTF8 { buffer in parse(UnsafeRawBufferPointer(buffer), limits) }.get()
    }

    /// The outcome as a value, for the `withUnsafe…` methods, which rethrow untyped errors.
    private static func parse(_ buffer: UnsafeRawBufferPointer, _ limits: JSONLimits) -> Result<JSON, JSONError> {
        do throws(JSONError) {
            return .success(try JSONParser.parse(buffer, limits: limits))
        } catch {
            return .failure(error)
        }
    }

    // MARK: - Encoding

    /// Appends the compact encoding of this value to `bytes`: no white space, members in stored
    /// order, only `"`, `\` and control characters escaped, doubles in their shortest round-trip
    /// form (`1.0`, `0.1`, `1e+16`) and non-finite doubles as `null`.
    public func encode(into bytes: inout [UInt8]) {
        var writer = JSONWriter()
        writer.write(self)
        writer.finish(appendingTo: &bytes)
    }

    /// The compact encoding of this value; see `encode(into:)`.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.finish()
    }
}
