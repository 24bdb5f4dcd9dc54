import SeamSchema

/// Reads the RFC 3339 text of a `date("…")` literal as Unix seconds, without Foundation.
///
/// Accepted: `YYYY-MM-DD` (midnight UTC) and `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, with `T`,
/// `t` or a space between date and time and `Z` or `z` for UTC. Years 0000–9999; no leap seconds.
/// A time without a zone is refused, because it would mean a different instant on each machine.
enum DateLiteral {
    /// Unix seconds, or `nil` when `text` is not in the accepted form.
    static func seconds(_ text: String) -> Double? {
        var reader = Reader(bytes: Array(text.utf8))
        guard let days = reader.date() else { return nil }
        if reader.atEnd { return Double(days * 86_400) }
        guard reader.separator(), let (clock, fraction) = reader.time(), let offset = reader.zone(), reader.atEnd else {
            return nil
        }
        return DecimalSeconds.value(whole: days * 86_400 + clock - offset, fraction: fraction)
    }

    /// Days from 1970-01-01 to the given civil date (proleptic Gregorian calendar).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func digits(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for b in bytes[index..<index + count] {
                guard ASCII.isDigit(b) else { return nil }
                value = value * 10 + Int64(b - 0x30)
            }
            index += count
            return value
        }

        mutating func expect(_ c: Character) -> Bool {
            guard index < bytes.count, bytes[index] == c.asciiValue else { return false }
            index += 1
            return true
        }

        /// `YYYY-MM-DD` as days since the epoch.
        mutating func date() -> Int64? {
            guard let y = digits(4), expect("-"), let m = digits(2), expect("-"), let d = digits(2) else { return nil }
            guard (1...12).contains(m), d >= 1, d <= DateLiteral.daysInMonth(year: y, month: m) else { return nil }
            return DateLiteral.daysFromCivil(year: y, month: m, day: d)
        }

        mutating func separator() -> Bool { expect("T") || expect("t") || expect(" ") }

        /// `HH:MM:SS[.fraction]` as whole seconds of the day and the fraction's digits.
        mutating func time() -> (Int64, ArraySlice<UInt8>)? {
            guard let h = digits(2), expect(":"), let m = digits(2), expect(":"), let s = digits(2) else { return nil }
            guard h < 24, m < 60, s < 60 else { return nil }
            var fraction: ArraySlice<UInt8> = []
            if expect(".") {
                let start = index
                while index < bytes.count, ASCII.isDigit(bytes[index]) { index += 1 }
                guard index > start else { return nil }
                fraction = bytes[start..<index]
            }
            return (h * 3600 + m * 60 + s, fraction)
        }

        /// `Z` or `±HH:MM` as seconds east of UTC.
        mutating func zone() -> Int64? {
            if expect("Z") || expect("z") { return 0 }
            let sign: Int64
            if expect("+") { sign = 1 } else if expect("-") { sign = -1 } else { return nil }
            guard let h = digits(2), expect(":"), let m = digits(2), h < 24, m < 60 else { return nil }
            return sign * (h * 3600 + m * 60)
        }
    }
}
