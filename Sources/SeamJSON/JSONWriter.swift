/// Writes JSON values as compact UTF-8: no white space, members in stored order, minimal escapes.
///
/// Writes into memory it owns and grows, so that each byte costs a capacity check rather than an
/// array's uniqueness and capacity checks; `finish` hands the bytes over in one copy.
struct JSONWriter: ~Copyable {
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0

    init(capacity: Int = 256) {
        self.capacity = max(16, capacity)
        storage = .allocate(capacity: self.capacity)
    }

    deinit { storage.deallocate() }

    /// The bytes written, as a new array.
    consuming func finish() -> [UInt8] {
        let written = count
        return [UInt8](unsafeUninitializedCapacity: written) { buffer, initialized in
            if let destination = buffer.baseAddress { destination.initialize(from: storage, count: written) }
            initialized = written
        }
    }

    /// Appends the bytes written to `bytes`.
    consuming func finish(appendingTo bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: storage, count: count))
    }

    // MARK: - Values

    mutating func write(_ value: JSON) {
        switch value {
        case .null: appendWord("null")
        case .bool(let truth): appendWord(truth ? "true" : "false")
        case .integer(let integer): writeInteger(integer)
        case .double(let double): writeDouble(double)
        case .string(let string): writeString(string)
        case .array(let elements): writeArray(elements)
        case .object(let object): writeObject(object)
        }
    }

    private mutating func writeArray(_ elements: [JSON]) {
        append(ASCII.openBracket)
        elements.withUnsafeBufferPointer { elements in
            for position in elements.indices {
                if position > 0 { append(ASCII.comma) }
                write(elements[position])
            }
        }
        append(ASCII.closeBracket)
    }

    private mutating func writeObject(_ object: JSONObject) {
        append(ASCII.openBrace)
        object.members.withUnsafeBufferPointer { members in
            for position in members.indices {
                if position > 0 { append(ASCII.comma) }
                writeString(members[position].key)
                append(ASCII.colon)
                write(members[position].value)
            }
        }
        append(ASCII.closeBrace)
    }

    // MARK: - Scalars

    mutating func writeInteger(_ integer: Int64) {
        reserve(20)
        if integer < 0 { append(ASCII.minus) }
        var magnitude = integer.magnitude
        var digits = 1
        var power: UInt64 = 10
        while digits < 20 && magnitude >= power {
            digits += 1
            power = power &* 10  // wraps only when digits reaches 20, where the loop stops
        }
        var position = count + digits
        count = position
        repeat {
            position -= 1
            storage[position] = ASCII.zero &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude != 0
    }

    /// The shortest text that reads back as the same double (Swift's `description`), with `.0`
    /// kept on integral values so that the double stays a double. Non-finite values, which JSON
    /// cannot express, become `null`.
    mutating func writeDouble(_ double: Double) {
        guard double.isFinite else { return appendWord("null") }
        let text = double.description
        Self.withUTF8(of: text) { digits in
            append(digits)
            // `description` already writes "1.0" and "1e+16"; this guards against a change in it.
            if !digits.contains(ASCII.dot) && !digits.contains(ASCII.lowerE) && !digits.contains(ASCII.upperE) {
                append(ASCII.dot)
                append(ASCII.zero)
            }
        }
    }

    /// A quoted string; escapes only `"`, `\` and control characters, as `\b \f \n \r \t` or `\u00xx`.
    mutating func writeString(_ string: String) {
        Self.withUTF8(of: string) { bytes in
            reserve(bytes.count + 2)
            append(ASCII.quote)
            var runStart = 0
            var i = 0
            while true {
                i = Self.skipUnescaped(bytes, from: i)
                guard i < bytes.count else { break }
                append(UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                writeEscape(bytes[i])
                i += 1
                runStart = i
            }
            append(UnsafeBufferPointer(rebasing: bytes[runStart...]))
            append(ASCII.quote)
        }
    }

    /// The position of the first byte at or after `start` that needs an escape, or the end.
    private static func skipUnescaped(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var i = start
        if let base = bytes.baseAddress {
            while i + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                if Self.needsEscape(word) { break }
                i += 8
            }
        }
        while i < bytes.count {
            let byte = bytes[i]
            if byte < 0x20 || byte == ASCII.quote || byte == ASCII.backslash { return i }
            i += 1
        }
        return i
    }

    /// Whether any of eight bytes is `"`, `\` or below 0x20 (bytes above 0x7F pass unescaped).
    @inline(__always)
    private static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* UInt64(ASCII.quote))
        let backslashes = word ^ (ones &* UInt64(ASCII.backslash))
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl) & high != 0
    }

    private mutating func writeEscape(_ byte: UInt8) {
        reserve(6)
        append(ASCII.backslash)
        switch byte {
        case ASCII.quote, ASCII.backslash: append(byte)
        case 0x08: append(UInt8(ascii: "b"))
        case 0x0C: append(UInt8(ascii: "f"))
        case 0x0A: append(UInt8(ascii: "n"))
        case 0x0D: append(UInt8(ascii: "r"))
        case 0x09: append(UInt8(ascii: "t"))
        default:
            appendWord("u00")
            append(ASCII.hexDigit(byte >> 4))
            append(ASCII.hexDigit(byte & 0x0F))
        }
    }

    // MARK: - Bytes

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toHold: count + 1) }
        storage[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (storage + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    mutating func appendWord(_ word: StaticString) {
        append(UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
    }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(toHold: count + extra) }
    }

    private mutating func grow(toHold needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        let newStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newStorage.initialize(from: storage, count: count)
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }

    /// Calls `body` with the UTF-8 of `string`, without copying a native string.
    @inline(__always)
    private static func withUTF8<R>(of string: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = string.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = string  // a bridged string: make it native
        return copy.withUTF8(body)
    }
}
