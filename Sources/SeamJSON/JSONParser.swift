/// A byte-level RFC 8259 parser: one pass over the input, no copies of unescaped strings
/// beyond the `String` made from them, and offsets for every error.
///
/// Strings and numbers are in `JSONParser+Strings.swift` and `JSONParser+Numbers.swift`.
struct JSONParser: ~Copyable {
    /// The input; it outlives the parser.
    let base: UnsafePointer<UInt8>
    /// The number of input bytes.
    let count: Int
    let limits: JSONLimits
    /// The next byte to read.
    var position = 0
    /// Decoded bytes of a string that has escapes; reused from string to string.
    var scratch = ParseStack<UInt8>(capacity: 64)
    /// Elements of the arrays now open, innermost last.
    var elements = ParseStack<JSON>(capacity: 16)
    /// Members of the objects now open, innermost last.
    var members = ParseStack<JSONObject.Member>(capacity: 16)
    /// Key fingerprints of the objects now open, parallel to `members` while an object is small.
    var fingerprints = ParseStack<UInt64>(capacity: 16)

    /// Parses `input` as one JSON text.
    ///
    /// - Throws: `JSONError` naming the first problem and its byte offset.
    static func parse(_ input: UnsafeRawBufferPointer, limits: JSONLimits) throws(JSONError) -> JSON {
        guard input.count <= limits.maxBytes else {
            throw JSONError(
                .tooLarge, at: limits.maxBytes, "the input is \(input.count) bytes, more than \(limits.maxBytes)")
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
        guard position < count else { throw failure(.unexpectedEnd, "the input ends where a value was expected") }
        switch base[position] {
        case ASCII.quote: return .string(try parseString())
        case ASCII.openBrace: return try parseObject(depth: depth + 1)
        case ASCII.openBracket: return try parseArray(depth: depth + 1)
        case ASCII.minus, ASCII.zero...ASCII.nine: return try parseNumber()
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .null
        default: throw unexpected("a value")
        }
    }

    // MARK: - Containers

    mutating func parseArray(depth: Int) throws(JSONError) -> JSON {
        let open = position
        try checkDepth(depth)
        position += 1
        skipWhitespace()
        if position < count, base[position] == ASCII.closeBracket {
            position += 1
            return .array([])
        }
        let first = elements.count
        while true {
            guard elements.count - first < limits.maxMembers else { throw tooMany("array", openedAt: open) }
            elements.push(try parseValue(depth: depth))
            skipWhitespace()
            guard position < count else { throw notClosed("array", openedAt: open) }
            switch base[position] {
            case ASCII.comma:
                position += 1
                skipWhitespace()
            case ASCII.closeBracket:
                position += 1
                return .array(elements.popArray(from: first))
            default:
                throw unexpected("',' or ']'")
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
        let first = members.count
        let firstFingerprint = fingerprints.count
        var index: [JSONObject.IndexKey: Int]? = nil
        while true {
            guard members.count - first < limits.maxMembers else { throw tooMany("object", openedAt: open) }
            guard position < count else { throw notClosed("object", openedAt: open) }
            guard base[position] == ASCII.quote else { throw unexpected("a string key") }
            let keyOffset = position
            let (key, fingerprint) = try parseKey()
            try checkNewKey(
                key, fingerprint, at: keyOffset, first: first, firstFingerprint: firstFingerprint, index: &index)
            skipWhitespace()
            guard position < count else { throw notClosed("object", openedAt: open) }
            guard base[position] == ASCII.colon else { throw unexpected("':'") }
            position += 1
            skipWhitespace()
            members.push(JSONObject.Member(key: key, value: try parseValue(depth: depth)))
            if index == nil, members.count - first > JSONObject.indexThreshold {
                index = JSONObject.makeIndex(members.buffer(from: first))
            }
            skipWhitespace()
            guard position < count else { throw notClosed("object", openedAt: open) }
            switch base[position] {
            case ASCII.comma:
                position += 1
                skipWhitespace()
            case ASCII.closeBrace:
                position += 1
                fingerprints.removeAll(from: firstFingerprint)
                return .object(JSONObject(uncheckedMembers: members.popArray(from: first), index: index))
            default:
                throw unexpected("',' or '}'")
            }
        }
    }

    /// Throws `duplicateKey` when `key` is among the members of the object being parsed.
    ///
    /// A small object compares fingerprints (length and outer bytes) first, so that most keys are
    /// told apart by one integer comparison; past `JSONObject.indexThreshold` the hash index that
    /// the object will keep does the check.
    private mutating func checkNewKey(
        _ key: String, _ fingerprint: UInt64, at offset: Int, first: Int, firstFingerprint: Int,
        index: inout [JSONObject.IndexKey: Int]?
    ) throws(JSONError) {
        if index != nil {
            guard index?.updateValue(members.count - first, forKey: JSONObject.IndexKey(key)) == nil else {
                throw duplicate(key, at: offset)
            }
            return
        }
        var slot = firstFingerprint
        while slot < fingerprints.count {
            if fingerprints[slot] == fingerprint,
                JSONObject.IndexKey.bytesEqual(members[first + slot - firstFingerprint].key, key)
            {
                throw duplicate(key, at: offset)
            }
            slot += 1
        }
        fingerprints.push(fingerprint)
    }

    /// A cheap summary of a key's bytes: equal keys have equal fingerprints.
    @inline(__always)
    static func fingerprint(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
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

    // MARK: - Errors (out of line, to keep the paths that succeed small)

    @inline(never)
    func failure(_ kind: JSONError.Kind, _ message: String) -> JSONError {
        JSONError(kind, at: position, message)
    }

    @inline(never)
    private func unexpected(_ expected: String) -> JSONError {
        JSONError(
            .unexpectedCharacter, at: position, "\(ASCII.describe(base[position])) where \(expected) was expected")
    }

    @inline(never)
    private func notClosed(_ container: String, openedAt open: Int) -> JSONError {
        JSONError(.unexpectedEnd, at: position, "the \(container) opened at byte \(open) is not closed")
    }

    @inline(never)
    private func tooMany(_ container: String, openedAt open: Int) -> JSONError {
        JSONError(
            .tooManyMembers, at: position, "the \(container) at byte \(open) has more than \(limits.maxMembers) members"
        )
    }

    @inline(never)
    private func duplicate(_ key: String, at offset: Int) -> JSONError {
        let shown = key.utf8.count <= 64 ? key : String(key.prefix(32)) + "…"
        return JSONError(.duplicateKey, at: offset, "the key \(JSON.string(shown)) appears twice in one object")
    }

    // MARK: - Small pieces

    private func checkDepth(_ depth: Int) throws(JSONError) {
        guard depth <= limits.maxDepth else {
            throw failure(.tooDeep, "more than \(limits.maxDepth) arrays and objects are open here")
        }
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
