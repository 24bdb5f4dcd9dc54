/// Writes JSON as a stream of tokens, without building a `JSON` value first: the broker encodes
/// rows straight from the store into the reply's bytes with it.
///
/// Commas and colons are placed for you: call `key(_:)` before each member of an object and a
/// value method after it; elements of an array are values one after another. The output is the
/// same compact form `JSON.encoded()` writes. Nesting is limited to 63 levels, far beyond any
/// message the protocol allows.
///
///     var w = JSONStreamWriter()
///     w.beginObject(); w.key("rows"); w.beginArray(); w.value(.integer(1)); w.endArray(); w.endObject()
///     w.finish()   // {"rows":[1]}
public struct JSONStreamWriter: ~Copyable {
    private var writer: JSONWriter
    /// Bit `d` is set when the container at depth `d` already holds an element.
    private var hasElement: UInt64 = 0
    private var depth = 0
    private var afterKey = false

    public init(capacity: Int = 512) { writer = JSONWriter(capacity: capacity) }

    public mutating func beginObject() { open(ASCII.openBrace) }
    public mutating func endObject() { close(ASCII.closeBrace) }
    public mutating func beginArray() { open(ASCII.openBracket) }
    public mutating func endArray() { close(ASCII.closeBracket) }

    /// The key of the next member of the object being written.
    public mutating func key(_ name: String) {
        separate()
        writer.writeString(name)
        writer.append(ASCII.colon)
        afterKey = true
    }

    public mutating func value(_ json: JSON) {
        separate()
        writer.write(json)
    }

    public mutating func string(_ s: String) {
        separate()
        writer.writeString(s)
    }

    public mutating func integer(_ i: Int64) {
        separate()
        writer.writeInteger(i)
    }

    public mutating func double(_ d: Double) {
        separate()
        writer.write(.double(d))
    }

    public mutating func bool(_ b: Bool) {
        separate()
        writer.appendWord(b ? "true" : "false")
    }

    public mutating func null() {
        separate()
        writer.appendWord("null")
    }

    /// Appends members already encoded — the inside of an object written by another stream
    /// writer, without its braces (`"a":1,"b":2`) — to the object being written. Writing a message
    /// once and sending it to many readers costs one copy per reader this way.
    public mutating func members(_ encoded: ArraySlice<UInt8>) {
        guard !encoded.isEmpty else { return }
        precondition(depth > 0 && !afterKey, "members go inside an object, between members")
        separate()
        encoded.withUnsafeBufferPointer { writer.append($0) }
    }

    /// Appends one whole value already encoded (by `JSON.encoded()` or another stream writer):
    /// a row kept encoded, say. The bytes are trusted to be one valid JSON value.
    public mutating func encoded(_ value: ArraySlice<UInt8>) {
        precondition(!value.isEmpty, "an encoded value is at least one byte")
        separate()
        value.withUnsafeBufferPointer { writer.append($0) }
    }

    /// Appends one raw byte after the document (a frame's NUL terminator).
    public mutating func appendTerminator(_ byte: UInt8) {
        precondition(depth == 0, "the document is not finished")
        writer.append(byte)
    }

    /// The bytes written.
    public consuming func finish() -> [UInt8] {
        precondition(depth == 0, "the document is not finished")
        return writer.finish()
    }

    // MARK: - Structure

    private mutating func open(_ bracket: UInt8) {
        precondition(depth < 63, "JSONStreamWriter nests at most 63 levels")
        separate()
        writer.append(bracket)
        depth += 1
        hasElement &= ~(1 << UInt64(depth))
    }

    private mutating func close(_ bracket: UInt8) {
        precondition(depth > 0 && !afterKey, "a container closed that was not open, or a key without its value")
        depth -= 1
        writer.append(bracket)
    }

    @inline(__always)
    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        let bit: UInt64 = 1 << UInt64(depth)
        if hasElement & bit != 0 { writer.append(ASCII.comma) }
        hasElement |= bit
    }
}
