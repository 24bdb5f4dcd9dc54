/// Writes JSON values as compact UTF-8: no white space, members in stored order, minimal escapes.
enum JSONWriter {
    static func write(_ value: JSON, into out: inout [UInt8]) {
        switch value {
        case .null: appendWord("null", into: &out)
        case .bool(let truth): appendWord(truth ? "true" : "false", into: &out)
        case .integer(let integer): writeInteger(integer, into: &out)
        case .double(let double): writeDouble(double, into: &out)
        case .string(let string): writeString(string, into: &out)
        case .array(let elements): writeArray(elements, into: &out)
        case .object(let object): writeObject(object, into: &out)
        }
    }

    private static func writeArray(_ elements: [JSON], into out: inout [UInt8]) {
        out.append(ASCII.openBracket)
        var first = true
        for element in elements {
            if !first { out.append(ASCII.comma) }
            first = false
            write(element, into: &out)
        }
        out.append(ASCII.closeBracket)
    }

    private static func writeObject(_ object: JSONObject, into out: inout [UInt8]) {
        out.append(ASCII.openBrace)
        var first = true
        for member in object.members {
            if !first { out.append(ASCII.comma) }
            first = false
            writeString(member.key, into: &out)
            out.append(ASCII.colon)
            write(member.value, into: &out)
        }
        out.append(ASCII.closeBrace)
    }

    // MARK: - Scalars

    private static func appendWord(_ word: StaticString, into out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
    }

    static func writeInteger(_ integer: Int64, into out: inout [UInt8]) {
        if integer < 0 { out.append(ASCII.minus) }
        var magnitude = integer.magnitude
        if magnitude < 10 {
            out.append(ASCII.zero &+ UInt8(truncatingIfNeeded: magnitude))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var first = digits.count
            while magnitude != 0 {
                first -= 1
                digits[first] = ASCII.zero &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[first...]))
        }
    }

    /// The shortest text that reads back as the same double (Swift's `description`), with `.0`
    /// kept on integral values so that the double stays a double. Non-finite values, which JSON
    /// cannot express, become `null`.
    static func writeDouble(_ double: Double, into out: inout [UInt8]) {
        guard double.isFinite else {
            appendWord("null", into: &out)
            return
        }
        var text = double.description
        text.withUTF8 { digits in
            out.append(contentsOf: digits)
            // `description` already writes "1.0" and "1e+16"; this guards against a change in it.
            if !digits.contains(ASCII.dot) && !digits.contains(ASCII.lowerE) && !digits.contains(ASCII.upperE) {
                out.append(ASCII.dot)
                out.append(ASCII.zero)
            }
        }
    }

    /// A quoted string; escapes only `"`, `\` and control characters, as `\b \f \n \r \t` or `\u00xx`.
    static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(ASCII.quote)
        var string = string
        string.withUTF8 { bytes in
            var runStart = 0
            for i in 0..<bytes.count {
                let byte = bytes[i]
                guard byte < 0x20 || byte == ASCII.quote || byte == ASCII.backslash else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                writeEscape(byte, into: &out)
                runStart = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(ASCII.quote)
    }

    private static func writeEscape(_ byte: UInt8, into out: inout [UInt8]) {
        out.append(ASCII.backslash)
        switch byte {
        case ASCII.quote, ASCII.backslash: out.append(byte)
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            appendWord("u00", into: &out)
            out.append(ASCII.hexDigit(byte >> 4))
            out.append(ASCII.hexDigit(byte & 0x0F))
        }
    }
}
