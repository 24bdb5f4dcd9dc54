/// Strings: the scan, escapes, and UTF-8 validation.
extension JSONParser {
    /// Parses the string whose opening quote is at `position` and leaves `position` after the
    /// closing quote.
    mutating func parseString() throws(JSONError) -> String {
        String(decoding: try scanString(), as: UTF8.self)
    }

    /// Parses a key like `parseString`, and returns its fingerprint for the duplicate check.
    mutating func parseKey() throws(JSONError) -> (String, UInt64) {
        let bytes = try scanString()
        return (String(decoding: bytes, as: UTF8.self), Self.fingerprint(bytes))
    }

    /// Validates the string at `position` and returns its decoded UTF-8 bytes: a range of the
    /// input when it has no escapes, else the contents of `scratch` (valid until the next string).
    ///
    /// Runs of plain ASCII are skipped eight bytes at a time.
    private mutating func scanString() throws(JSONError) -> UnsafeBufferPointer<UInt8> {
        let open = position
        var i = position + 1
        while true {
            i = skipPlainASCII(from: i)
            guard i < count else { break }
            let byte = base[i]
            if byte == ASCII.quote {
                try checkStringLength(i - open - 1, openedAt: open)
                position = i + 1
                return UnsafeBufferPointer(start: base + open + 1, count: i - open - 1)
            } else if byte == ASCII.backslash {
                return try scanEscapedString(openedAt: open, firstEscape: i)
            } else if byte < 0x20 {
                throw controlCharacter(byte, at: i)
            } else if byte >= 0x80 {
                i = try skipUTF8Sequence(at: i)
            } else {
                i += 1
            }
        }
        throw JSONError(.unexpectedEnd, at: count, "the string opened at byte \(open) is not closed")
    }

    /// The slow path of `scanString`, from the first backslash on.
    private mutating func scanEscapedString(
        openedAt open: Int, firstEscape: Int
    ) throws(JSONError) -> UnsafeBufferPointer<UInt8> {
        scratch.removeAll()
        var i = open + 1
        while i < count {
            let runEnd = i == firstEscape ? i : skipPlainASCII(from: i)
            scratch.push(contentsOf: UnsafeBufferPointer(start: base + i, count: runEnd - i))
            i = runEnd
            guard i < count else { break }
            let byte = base[i]
            if byte == ASCII.quote {
                try checkStringLength(scratch.count, openedAt: open)
                position = i + 1
                return scratch.buffer()
            } else if byte == ASCII.backslash {
                i = try decodeEscape(at: i)
            } else if byte < 0x20 {
                throw controlCharacter(byte, at: i)
            } else if byte >= 0x80 {
                let end = try skipUTF8Sequence(at: i)
                scratch.push(contentsOf: UnsafeBufferPointer(start: base + i, count: end - i))
                i = end
            } else {
                scratch.push(byte)
                i += 1
            }
        }
        throw JSONError(.unexpectedEnd, at: count, "the string opened at byte \(open) is not closed")
    }

    /// Decodes the escape at `i` into `scratch` and returns the offset after it.
    private mutating func decodeEscape(at i: Int) throws(JSONError) -> Int {
        guard i + 1 < count else { throw JSONError(.unexpectedEnd, at: count, "the input ends inside an escape") }
        let simple: UInt8
        switch base[i + 1] {
        case ASCII.quote: simple = ASCII.quote
        case ASCII.backslash: simple = ASCII.backslash
        case ASCII.slash: simple = ASCII.slash
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"): return try decodeUnicodeEscape(at: i)
        case let other:
            throw JSONError(.invalidEscape, at: i, "'\\' followed by \(ASCII.describe(other)) is not a JSON escape")
        }
        scratch.push(simple)
        return i + 2
    }

    /// Decodes `\uXXXX`, or a surrogate pair `\uD8xx\uDCxx`, at `i`.
    private mutating func decodeUnicodeEscape(at i: Int) throws(JSONError) -> Int {
        let unit = try hexQuad(at: i)
        switch unit {
        case 0xD800...0xDBFF:
            var low: UInt32? = nil
            if i + 7 < count, base[i + 6] == ASCII.backslash, base[i + 7] == UInt8(ascii: "u") {
                low = try hexQuad(at: i + 6)
            }
            guard let low, (0xDC00...0xDFFF).contains(low) else {
                throw JSONError(
                    .unpairedSurrogate, at: i, "the high surrogate \\u\(hex(unit)) is not followed by a low surrogate")
            }
            appendUTF8(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            return i + 12
        case 0xDC00...0xDFFF:
            throw JSONError(.unpairedSurrogate, at: i, "the low surrogate \\u\(hex(unit)) follows no high surrogate")
        default:
            appendUTF8(unit)
            return i + 6
        }
    }

    /// The four hex digits after the `\u` at `i`.
    private func hexQuad(at i: Int) throws(JSONError) -> UInt32 {
        var unit: UInt32 = 0
        for k in 2..<6 {
            guard i + k < count else {
                throw JSONError(.unexpectedEnd, at: count, "the input ends inside a \\u escape")
            }
            guard let digit = ASCII.hexValue(base[i + k]) else {
                throw JSONError(.invalidEscape, at: i, "\\u must be followed by four hex digits")
            }
            unit = unit << 4 | digit
        }
        return unit
    }

    private func hex(_ unit: UInt32) -> String {
        let digits = String(unit, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.push(UInt8(truncatingIfNeeded: scalar))
        case 0x80..<0x800:
            scratch.push(0xC0 | UInt8(truncatingIfNeeded: scalar >> 6))
            scratch.push(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.push(0xE0 | UInt8(truncatingIfNeeded: scalar >> 12))
            scratch.push(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            scratch.push(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        default:
            scratch.push(0xF0 | UInt8(truncatingIfNeeded: scalar >> 18))
            scratch.push(0x80 | UInt8(truncatingIfNeeded: (scalar >> 12) & 0x3F))
            scratch.push(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            scratch.push(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        }
    }

    @inline(__always)
    private func checkStringLength(_ length: Int, openedAt open: Int) throws(JSONError) {
        guard length <= limits.maxStringBytes else { throw stringTooLong(length, openedAt: open) }
    }

    @inline(never)
    private func stringTooLong(_ length: Int, openedAt open: Int) -> JSONError {
        JSONError(.stringTooLong, at: open, "the string is \(length) bytes, more than \(limits.maxStringBytes)")
    }

    @inline(never)
    private func controlCharacter(_ byte: UInt8, at i: Int) -> JSONError {
        JSONError(.controlCharacter, at: i, "\(ASCII.describe(byte)) inside a string must be written as an escape")
    }

    // MARK: - Scanning

    /// The offset of the first byte at or after `i` that is a quote, a backslash, a control
    /// character or not ASCII (or `count`).
    private func skipPlainASCII(from start: Int) -> Int {
        var i = start
        while i + 8 <= count {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            if Self.hasSpecialByte(word) { break }
            i += 8
        }
        while i < count {
            let byte = base[i]
            if byte == ASCII.quote || byte == ASCII.backslash || byte < 0x20 || byte >= 0x80 { break }
            i += 1
        }
        return i
    }

    /// Whether any of the eight bytes is `"`, `\`, below 0x20 or above 0x7F. The subtraction
    /// tricks can flag a byte above a real hit, never one in a word without a hit.
    @inline(__always)
    static func hasSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* UInt64(ASCII.quote))
        let backslashes = word ^ (ones &* UInt64(ASCII.backslash))
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl | word) & high != 0
    }

    /// Checks the UTF-8 sequence whose lead byte (at least 0x80) is at `i` and returns the offset
    /// after it (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
    func skipUTF8Sequence(at i: Int) throws(JSONError) -> Int {
        let lead = base[i]
        let length: Int
        let secondRange: ClosedRange<UInt8>
        switch lead {
        case 0xC2...0xDF: (length, secondRange) = (2, 0x80...0xBF)
        case 0xE0: (length, secondRange) = (3, 0xA0...0xBF)  // shorter forms are overlong
        case 0xE1...0xEC, 0xEE...0xEF: (length, secondRange) = (3, 0x80...0xBF)
        case 0xED: (length, secondRange) = (3, 0x80...0x9F)  // above would encode surrogates
        case 0xF0: (length, secondRange) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, secondRange) = (4, 0x80...0xBF)
        case 0xF4: (length, secondRange) = (4, 0x80...0x8F)  // above is beyond U+10FFFF
        default: throw invalidUTF8(at: i, "\(ASCII.describe(lead)) cannot start a UTF-8 sequence")
        }
        guard i + length <= count else { throw invalidUTF8(at: i, "the input ends inside a UTF-8 sequence") }
        guard secondRange.contains(base[i + 1]) else {
            throw invalidUTF8(at: i, "an overlong, surrogate, out-of-range or truncated UTF-8 sequence")
        }
        for k in 2..<length where base[i + k] & 0xC0 != 0x80 {
            throw invalidUTF8(at: i, "a truncated UTF-8 sequence")
        }
        return i + length
    }

    @inline(never)
    private func invalidUTF8(at i: Int, _ message: String) -> JSONError {
        JSONError(.invalidUTF8, at: i, message)
    }
}
