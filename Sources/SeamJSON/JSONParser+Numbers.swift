import SeamSystem

/// Numbers: the grammar of RFC 8259 §6, integers into `Int64`, the rest into `Double`.
extension JSONParser {
    /// Parses the number at `position` (a `-` or a digit).
    ///
    /// An integer literal that fits `Int64` becomes `.integer` (`-0` is `.integer(0)`); anything
    /// else becomes `.double`, correctly rounded. A magnitude beyond `Double` throws
    /// `numberOutOfRange`; one too small for it rounds to zero.
    mutating func parseNumber() throws(JSONError) -> JSON {
        let start = position
        var digits = DecimalDigits()
        var i = start
        let negative = base[i] == ASCII.minus
        if negative { i += 1 }
        guard i < count, isDigit(base[i]) else { throw invalidNumber(at: start, "'-' must be followed by a digit") }
        if base[i] == ASCII.zero {
            i += 1
            if i < count, isDigit(base[i]) { throw invalidNumber(at: start, "a number cannot have a leading zero") }
        } else {
            while i < count, isDigit(base[i]) {
                digits.add(base[i] &- ASCII.zero, inFraction: false)
                i += 1
            }
        }
        var isInteger = true
        if i < count, base[i] == ASCII.dot {
            isInteger = false
            i += 1
            guard i < count, isDigit(base[i]) else {
                throw invalidNumber(at: start, "a '.' must be followed by a digit")
            }
            while i < count, isDigit(base[i]) {
                digits.add(base[i] &- ASCII.zero, inFraction: true)
                i += 1
            }
        }
        if i < count, base[i] == ASCII.lowerE || base[i] == ASCII.upperE {
            isInteger = false
            i = try parseExponent(after: i, numberStart: start, into: &digits)
        }
        position = i
        if isInteger, let integer = digits.int64(negative: negative) { return .integer(integer) }
        do {
            return .double(try double(digits, negative: negative, start: start))
        } catch where limits.outOfRangeNumbersAsNull && error.kind == .numberOutOfRange {
            return .null
        }
    }

    /// Parses the exponent whose `e` is at `e` and returns the offset after it.
    private func parseExponent(
        after e: Int, numberStart: Int, into digits: inout DecimalDigits
    ) throws(JSONError) -> Int {
        var i = e + 1
        var negative = false
        if i < count, base[i] == ASCII.plus || base[i] == ASCII.minus {
            negative = base[i] == ASCII.minus
            i += 1
        }
        guard i < count, isDigit(base[i]) else {
            throw invalidNumber(at: numberStart, "an exponent must have at least one digit")
        }
        var value = 0
        while i < count, isDigit(base[i]) {
            if value < 1_000_000 { value = value * 10 + Int(base[i] &- ASCII.zero) }  // saturate: out of range anyway
            i += 1
        }
        digits.exponent += negative ? -value : value
        return i
    }

    /// The double nearest to the digits: exact arithmetic when mantissa and power of ten are
    /// both exact doubles (Clinger's fast path), else the C library's correctly rounded `strtod`.
    private func double(_ digits: DecimalDigits, negative: Bool, start: Int) throws(JSONError) -> Double {
        if digits.mantissa == 0 && !digits.truncated { return negative ? -0.0 : 0.0 }
        if !digits.truncated, digits.mantissa <= 1 << 53, (-22...22).contains(digits.exponent) {
            var value = Double(digits.mantissa)
            if digits.exponent < 0 {
                value /= Self.powersOfTen[-digits.exponent]
            } else {
                value *= Self.powersOfTen[digits.exponent]
            }
            return negative ? -value : value
        }
        // The slow path, correctly rounded by the C library: the literal is copied, with the NUL
        // strtod needs, into a buffer on the stack (no String made for the common 17-digit case).
        let length = position - start
        let value = withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer -> Double in
            for k in 0..<length { buffer[k] = CChar(bitPattern: base[start + k]) }
            buffer[length] = 0
            return DecimalConversion.double(nulTerminated: buffer.baseAddress!)
        }
        guard value.isFinite else {
            // At most 40 bytes of it: a 4 MB number must not make a 4 MB error reply.
            let shown = String(decoding: UnsafeBufferPointer(start: base + start, count: min(length, 40)), as: UTF8.self)
                + (length > 40 ? "… (\(length) bytes)" : "")
            throw JSONError(.numberOutOfRange, at: start, "\(shown) is too large for a 64-bit floating-point number")
        }
        return value
    }

    /// 10^0 … 10^22: every one an exact double.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- ASCII.zero < 10 }

    private func invalidNumber(at offset: Int, _ message: String) -> JSONError {
        JSONError(.invalidNumber, at: offset, message)
    }
}

/// The significant digits of a number as an integer mantissa and a decimal exponent.
struct DecimalDigits {
    /// Up to 19 significant digits, which always fit a `UInt64`.
    var mantissa: UInt64 = 0
    var significantDigits = 0
    /// The value is `mantissa × 10^exponent` (before truncation).
    var exponent = 0
    /// Whether nonzero digits beyond the 19th were dropped.
    var truncated = false

    @inline(__always)
    mutating func add(_ digit: UInt8, inFraction: Bool) {
        if significantDigits < 19 {
            if mantissa == 0 && digit == 0 {
                if inFraction { exponent -= 1 }  // a leading zero of the fraction: 0.00x
                return
            }
            mantissa = mantissa &* 10 &+ UInt64(digit)
            significantDigits += 1
            if inFraction { exponent -= 1 }
        } else {
            if digit != 0 { truncated = true }
            if !inFraction { exponent += 1 }
        }
    }

    /// The integer, when it has no fraction or exponent (checked by the caller) and fits `Int64`.
    func int64(negative: Bool) -> Int64? {
        guard exponent == 0, !truncated else { return nil }
        if negative {
            return mantissa <= 1 << 63 ? Int64(bitPattern: 0 &- mantissa) : nil
        }
        return mantissa <= UInt64(Int64.max) ? Int64(mantissa) : nil
    }
}
