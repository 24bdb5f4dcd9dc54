/// Whole seconds and a decimal fraction of a second as the nearest double: the one rounding of
/// the exact decimal value, so that every reader of a time's text (the wire's dates, a
/// predicate's `date("…")`) gets the same double for it. Adding a fraction rounded on its own to
/// the whole seconds rounds twice, and the two readers once disagreed by the last bit.
public enum DecimalSeconds {
    /// `whole` plus `0.<fraction>` (ASCII digits, possibly none), correctly rounded.
    public static func value(whole: Int64, fraction: some Collection<UInt8>) -> Double {
        if let exact = quotient(whole: whole, micros: nil, fraction: fraction) { return exact }
        return valueByText(whole: whole, fraction: fraction)
    }

    /// `value` through Swift's reading of the decimal text: any whole, any number of digits.
    static func valueByText(whole: Int64, fraction: some Collection<UInt8>) -> Double {
        var digits = Array(fraction)
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        if digits.isEmpty { return Double(whole) }
        if whole >= 0 { return Double("\(whole)." + String(decoding: digits, as: UTF8.self)) ?? .nan }
        // A negative whole: whole + 0.f = -((|whole| - 1) + (1 - 0.f)), and 1 - 0.f is 0.g where
        // g = 10^n - f, n digits long (f is not 0: trailing zeros went, and digits remain).
        let complement = digits.indices.map { i -> UInt8 in
            let d = digits[i] - UInt8(ascii: "0")
            return UInt8(ascii: "0") + (i == digits.count - 1 ? 10 - d : 9 - d)
        }
        return Double("-\(-(whole + 1))." + String(decoding: complement, as: UTF8.self)) ?? .nan
    }

    /// `whole` plus `0.<fraction>` rounded to the microsecond first (half away from zero, on the
    /// decimal digits, never on a double), as the nearest double: every date Seam stores, so that
    /// a value read back from the wire (six digits) is the very double its saver stored.
    public static func microseconds(whole: Int64, fraction: some Collection<UInt8>) -> Double {
        if let exact = quotient(whole: whole, micros: 6, fraction: fraction) { return exact }
        return microsecondsByText(whole: whole, fraction: fraction)
    }

    /// `microseconds` through `valueByText`: any whole, any number of digits.
    static func microsecondsByText(whole: Int64, fraction: some Collection<UInt8>) -> Double {
        let digits = Array(fraction)
        guard digits.count > 6 else { return value(whole: whole, fraction: digits) }
        var kept = Array(digits.prefix(6))
        // The seventh digit decides (half up: the decimal is non-negative after the whole part).
        if digits[6] >= UInt8(ascii: "5") {
            var i = 5
            while i >= 0 {
                if kept[i] == UInt8(ascii: "9") {
                    kept[i] = UInt8(ascii: "0")
                    i -= 1
                } else {
                    kept[i] += 1
                    break
                }
            }
            if i < 0 { return valueByText(whole: whole + 1, fraction: kept) }
        }
        return valueByText(whole: whole, fraction: kept)
    }

    /// The value as one integer over a power of ten, when both are exact doubles (the integer
    /// within ±2^53, at most 22 digits): IEEE division rounds the exact quotient once, to the
    /// nearest double, as reading the decimal text does — without a text, an array or `strtod`.
    /// A save of a thousand rows reads a date or two a row. With `micros` (6), the digits past
    /// the sixth round the sixth, half up, as `microseconds` does. Nil where the integer would
    /// not be exact (a whole past some 285 years from 1970 with six digits, or many digits).
    private static func quotient(whole: Int64, micros: Int?, fraction: some Collection<UInt8>) -> Double? {
        let limit: Int64 = 1 << 53
        guard whole > -limit, whole < limit else { return nil }
        var numerator = whole, scale = 1.0, count = 0
        for digit in fraction {
            if count == micros {
                if digit >= UInt8(ascii: "5") { numerator += 1 }  // the decimal after the whole part is not negative
                break
            }
            guard count < 22, digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            numerator = numerator * 10 + Int64(digit - UInt8(ascii: "0"))
            guard numerator > -limit, numerator < limit else { return nil }
            scale *= 10
            count += 1
        }
        guard numerator > -limit, numerator < limit else { return nil }
        return Double(numerator) / scale
    }

    /// A date as Seam stores it: `seconds` rounded to the microsecond from its shortest decimal
    /// form (what a client meant by it), as the nearest double (see `microseconds`).
    public static func canonicalDate(_ seconds: Double) -> Double {
        guard seconds.isFinite, seconds >= 0 else {
            return seconds.isFinite ? (seconds * 1_000_000).rounded() / 1_000_000 : seconds
        }
        // Already at the microsecond (whole seconds, or what the wire carried): the double
        // nearest a decimal of at most six places is that decimal's, so it is its own canonical
        // form — and no text is made for the common case.
        if seconds < 9e9 {
            let micro = (seconds * 1_000_000).rounded()
            if micro / 1_000_000 == seconds { return seconds }
        }
        let text = "\(seconds)"
        guard !text.contains("e"), let dot = text.firstIndex(of: "."), let whole = Int64(text[..<dot]) else {
            return (seconds * 1_000_000).rounded() / 1_000_000
        }
        return microseconds(whole: whole, fraction: text.utf8[text.utf8.index(after: dot)...])
    }
}
