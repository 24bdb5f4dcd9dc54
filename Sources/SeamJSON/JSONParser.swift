/// A byte-level RFC 8259 parser: one pass over the input, no copies of unescaped strings
/// beyond the `String` made from them, and offsets for every error.
///
/// Strings and numbers are in `JSONParser+Strings.swift` and `JSONParser+Numbers.swift`.
struct JSONParser {
    /// The input; it outlives the parser.
    let base: UnsafePointer<UInt8>
    /// The number of input bytes.
    let count: Int
    let limits: JSONLimits
    /// The next byte to read.
    var position = 0
    /// Decoded bytes of a string that has escapes; reused from string to string.
    var scratch: [UInt8] = []
    /// Key fingerprints of the objects now open, innermost last, for the duplicate check.
    var fingerprints: [UInt64] = []

    /// Parses `input` as one JSON text.
    ///
    /// - Throws: `JSONError` naming the first problem and its byte offset.
    static func parse(_ input: UnsafeRawBufferPointer, limits: JSONLimits) throws(JSONError) -> JSON {
        guard input.count <= limits.maxBytes else {
            throw JSONError(.tooLarge, at: limits.maxBytes, "the input is \(input.count) bytes, more than \(limits.maxBytes)")
        }
        guard let start = input.baseAddress, input.count > 0 else {
            throw JSONError(.unexpectedEnd, at: 0, "the input is empty")
        }
        // Raw bytes are read as UInt8, which may alias memory bound to any byte type.
        var parser = JSONParser(base: start.assumingMemoryBound(to: UInt8.self), count: input.count, limits: limits)
        return try parser.parseDocument()
    }

    mutating func parseDocument() throws(JSONError) -> JSON {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard position == count else {
            throw JSONError(.trailingCharacters, at: position, "\(ASCII.describe(base[position])) after the value")
        }
        return value
    }

    /// Parses the value at `position`; `depth` is the number of containers around it.
    mutating func parseValue(depth: Int) throws(JSONError) -> JSON {
        guard position < count else { throw JSONError(.unexpectedEnd, at: position, "the input ends where a value was expected") }
        switch base[position] {
        case ASCII.quote: return .string(try parseString())
        case ASCII.openBrace: return try parseObject(depth: depth + 1)
        case ASCII.openBracket: return try parseArray(depth: depth + 1)
        case ASCII.minus, ASCII.zero...ASCII.nine: return try parseNumber()
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        default:
            throw JSONError(.unexpectedCharacter, at: position, "\(ASCII.describe(base[position])) where a value was expected")
        }
    }

    // MARK: - Containers

    mutating func parseArray(depth: Int) throws(JSONError) -> JSON {
        let open = position
        try checkDepth(depth)
        position += 1
        skipWhitespace()
        var elements: [JSON] = []
        if position < count, base[position] == ASCII.closeBracket {
            position += 1
            return .array(elements)
        }
        while true {
            guard elements.count < limits.maxMembers else {
                throw JSONError(.tooManyMembers, at: position, "the array at byte \(open) has more than \(limits.maxMembers) elements")
            }
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try nextByte(closing: "array", openedAt: open) {
            case ASCII.comma: skipWhitespace()
            case ASCII.closeBracket: return .array(elements)
            case let byte:
                position -= 1
                throw JSONError(.unexpectedCharacter, at: position, "\(ASCII.describe(byte)) where ',' or ']' was expected")
            }
        }
    }

    mutating func parseObject(depth: Int) throws(JSONError) -> JSON {
        let open = position
        try checkDepth(depth)
        position += 1
        skipWhitespace()
        if position < count, base[position] == ASCII.closeBrace {
            position += 1
            return .object(JSONObject())
        }
        var members: [JSONObject.Element] = []
        var index: [JSONObject.IndexKey: Int]? = nil
        let firstFingerprint = fingerprints.count
        defer { fingerprints.removeLast(fingerprints.count - firstFingerprint) }
        while true {
            guard members.count < limits.maxMembers else {
                throw JSONError(.tooManyMembers, at: position, "the object at byte \(open) has more than \(limits.maxMembers) members")
            }
            let keyOffset = position
            let key = try parseKey(objectOpenedAt: open)
            try checkNewKey(key, at: keyOffset, members: members, index: &index, firstFingerprint: firstFingerprint)
            skipWhitespace()
            guard try nextByte(closing: "object", openedAt: open) == ASCII.colon else {
                position -= 1
                throw JSONError(.unexpectedCharacter, at: position, "\(ASCII.describe(base[position])) where ':' was expected")
            }
            skipWhitespace()
            members.append((key, try parseValue(depth: depth)))
            if index == nil, members.count > JSONObject.indexThreshold { index = JSONObject.makeIndex(members) }
            skipWhitespace()
            switch try nextByte(closing: "object", openedAt: open) {
            case ASCII.comma: skipWhitespace()
            case ASCII.closeBrace: return .object(JSONObject(uncheckedMembers: members, index: index))
            case let byte:
                position -= 1
                throw JSONError(.unexpectedCharacter, at: position, "\(ASCII.describe(byte)) where ',' or '}' was expected")
            }
        }
    }

    /// Parses a member's key, which must be a string.
    private mutating func parseKey(objectOpenedAt open: Int) throws(JSONError) -> String {
        guard position < count else {
            throw JSONError(.unexpectedEnd, at: position, "the object opened at byte \(open) is not closed")
        }
        guard base[position] == ASCII.quote else {
            throw JSONError(.unexpectedCharacter, at: position, "\(ASCII.describe(base[position])) where a string key was expected")
        }
        return try parseString()
    }

    /// Throws `duplicateKey` when `key` is among `members`.
    ///
    /// Small objects compare fingerprints (length and outer bytes) first, so that most keys are
    /// told apart by one integer comparison; past `JSONObject.indexThreshold` the hash index
    /// that the object will keep does the check.
    private mutating func checkNewKey(
        _ key: String, at offset: Int, members: [JSONObject.Element], index: inout [JSONObject.IndexKey: Int]?,
        firstFingerprint: Int
    ) throws(JSONError) {
        if index != nil {
            guard index?.updateValue(members.count, forKey: JSONObject.IndexKey(key)) == nil else {
                throw duplicate(key, at: offset)
            }
            return
        }
        let fingerprint = Self.fingerprint(key)
        var slot = firstFingerprint
        while slot < fingerprints.count {
            if fingerprints[slot] == fingerprint, JSONObject.IndexKey.bytesEqual(members[slot - firstFingerprint].key, key) {
                throw duplicate(key, at: offset)
            }
            slot += 1
        }
        fingerprints.append(fingerprint)
    }

    private func duplicate(_ key: String, at offset: Int) -> JSONError {
        JSONError(.duplicateKey, at: offset, "the key \"\(key)\" appears twice in one object")
    }

    /// A cheap summary of a key's bytes: equal keys have equal fingerprints.
    static func fingerprint(_ key: String) -> UInt64 {
        let fingerprint = key.utf8.withContiguousStorageIfAvailable { bytes -> UInt64 in
            let n = bytes.count
            guard let start = bytes.baseAddress, n >= 8 else {
                var packed = UInt64(truncatingIfNeeded: n) << 56
                for i in 0..<n { packed |= UInt64(bytes[i]) << (8 * UInt64(i)) }
                return packed
            }
            let head = UnsafeRawPointer(start).loadUnaligned(as: UInt64.self)
            let tail = UnsafeRawPointer(start + (n - 8)).loadUnaligned(as: UInt64.self)
            return head ^ (tail &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(truncatingIfNeeded: n)
        }
        return fingerprint ?? UInt64(truncatingIfNeeded: key.utf8.count)
    }

    // MARK: - Small pieces

    private func checkDepth(_ depth: Int) throws(JSONError) {
        guard depth <= limits.maxDepth else {
            throw JSONError(.tooDeep, at: position, "more than \(limits.maxDepth) arrays and objects are open here")
        }
    }

    /// Reads one byte of a container's punctuation, or throws `unexpectedEnd`.
    private mutating func nextByte(closing container: String, openedAt open: Int) throws(JSONError) -> UInt8 {
        guard position < count else {
            throw JSONError(.unexpectedEnd, at: position, "the \(container) opened at byte \(open) is not closed")
        }
        let byte = base[position]
        position += 1
        return byte
    }

    /// Consumes `true`, `false` or `null`, whose first letter is at `position`.
    private mutating func expectWord(_ word: StaticString) throws(JSONError) {
        let start = position
        for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
            guard position < count else {
                throw JSONError(.unexpectedEnd, at: position, "the input ends inside '\(word)'")
            }
            guard base[position] == expected else {
                throw JSONError(.unexpectedCharacter, at: start, "not a value: expected '\(word)'")
            }
            position += 1
        }
    }

    mutating func skipWhitespace() {
        while position < count {
            switch base[position] {
            case ASCII.space, ASCII.newline, ASCII.carriageReturn, ASCII.tab: position += 1
            default: return
            }
        }
    }
}
