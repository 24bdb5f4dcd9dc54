import Glibc

/// Decimal text to binary floating point, by the C library.
public enum DecimalConversion {
    /// The double nearest to the decimal number `text` spells (NUL-terminated), correctly
    /// rounded by `strtod`; ±infinity past the double range, 0 (or the nearest subnormal) below it.
    public static func double(nulTerminated text: UnsafePointer<CChar>) -> Double { strtod(text, nil) }
}
