/// Whole seconds and a decimal fraction of a second as the nearest double: the one rounding of
/// the exact decimal value, so that every reader of a time's text (the wire's dates, a
/// predicate's `date("…")`) gets the same double for it. Adding a fraction rounded on its own to
/// the whole seconds rounds twice, and the two readers once disagreed by the last bit.
public enum DecimalSeconds {
    /// `whole` plus `0.<fraction>` (ASCII digits, possibly none), correctly rounded.
    public static func value(whole: Int64, fraction: some Collection<UInt8>) -> Double {
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
}
