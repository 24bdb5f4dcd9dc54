import SeamSchema

/// A problem with a duration, a step or a steps document: says what was wrong and what would do.
public struct TimerInputError: Error, Sendable, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Durations as people type them: `90s`, `5m`, `1h30m`, `2h`, `1:30` (minutes:seconds),
/// `1:02:03` (hours:minutes:seconds), or a bare number of seconds.
public enum DurationText {
    /// The longest duration accepted: a week.
    public static let maximum = 7 * 24 * 3600

    /// The seconds `text` says. A form this does not know is "not a duration"; a known form too
    /// long — however many digits it has — is "longer than a week", every time.
    public static func parse(_ text: String) throws(TimerInputError) -> Int {
        let t = text.trimmingSpaces
        let fail = TimerInputError("'\(text)' is not a duration: write 90s, 5m, 1h30m, 1:30 (minutes:seconds), 1:02:03 or a number of seconds")
        let tooLong = TimerInputError("'\(text)' is longer than a week: a step lasts at most 168h (7 days)")
        // A run of digits as a number; past seven significant digits it is over a week in any unit.
        func number(_ digits: Substring) throws(TimerInputError) -> Int {
            let significant = digits.drop { $0 == "0" }
            guard significant.count <= 7 else { throw tooLong }
            return Int(significant) ?? 0
        }
        guard !t.isEmpty else { throw fail }
        var seconds = 0
        if t.contains(":") {
            let parts = t.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) })
            else { throw fail }
            var numbers: [Int] = []
            for part in parts { numbers.append(try number(part)) }
            if numbers.dropFirst().contains(where: { $0 >= 60 }) { throw fail }
            seconds = numbers.reduce(0) { $0 * 60 + $1 }
        } else if t.allSatisfy(\.isASCIIDigit) {
            seconds = try number(t[...])
        } else {
            var digits = ""
            var seen = Set<Character>()
            var lastUnit = Int.max
            for c in t {
                if c.isASCIIDigit {
                    digits.append(c)
                    continue
                }
                let unit: Int
                switch c {
                case "h": unit = 3600
                case "m": unit = 60
                case "s": unit = 1
                default: throw fail
                }
                // Each unit once, largest first, each with a number before it.
                guard !digits.isEmpty, !seen.contains(c), unit < lastUnit else { throw fail }
                seen.insert(c)
                lastUnit = unit
                seconds += try number(digits[...]) * unit
                digits = ""
            }
            guard digits.isEmpty else { throw fail }
        }
        guard seconds > 0 else { throw TimerInputError("'\(text)' is zero: a step lasts at least one second") }
        guard seconds <= maximum else { throw tooLong }
        return seconds
    }

    /// The short form: `45s`, `5m`, `1h30m`, `1h0m5s`.
    public static func format(_ seconds: Int) -> String {
        let s = max(0, seconds)
        let h = s / 3600, m = (s % 3600) / 60, r = s % 60
        var out = ""
        if h > 0 { out += "\(h)h" }
        if m > 0 || (h > 0 && r > 0) { out += "\(m)m" }
        if r > 0 || out.isEmpty { out += "\(r)s" }
        return out
    }

    /// A clock face for time remaining: `4:05`, `1:02:03`.
    public static func clock(_ seconds: Double) -> String {
        let s = Int(max(0, seconds).rounded(.up))
        let h = s / 3600, m = (s % 3600) / 60, r = s % 60
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return h > 0 ? "\(h):\(two(m)):\(two(r))" : "\(m):\(two(r))"
    }
}

/// One step of a timer: a label and how long it lasts. In the store, `steps` is a JSON array of
/// `{"label": String, "seconds": Int}`; keys added by later versions are kept as they are.
public struct Step: Sendable, Hashable {
    public var label: String
    public var seconds: Int
    /// Members other than label and seconds, carried through unchanged.
    public var extra: [(String, JSONValue)]

    public init(label: String, seconds: Int, extra: [(String, JSONValue)] = []) {
        self.label = label
        self.seconds = seconds
        self.extra = extra
    }

    public static func == (a: Step, b: Step) -> Bool { a.label == b.label && a.seconds == b.seconds && a.extraJSON == b.extraJSON }
    public func hash(into h: inout Hasher) {
        h.combine(label)
        h.combine(seconds)
        h.combine(extraJSON)
    }
    private var extraJSON: String { JSONValue.object(extra).minified }

    /// `LABEL=DURATION` as typed on the command line (`Steep=3m`).
    public static func parse(_ argument: String) throws(TimerInputError) -> Step {
        guard let eq = argument.lastIndex(of: "=") else {
            throw TimerInputError("'\(argument)' is not a step: write LABEL=DURATION, e.g. Steep=3m")
        }
        let label = String(argument[..<eq]).trimmingSpaces
        guard !label.isEmpty else { throw TimerInputError("the step '\(argument)' has no label: write LABEL=DURATION") }
        return Step(label: label, seconds: try DurationText.parse(String(argument[argument.index(after: eq)...])))
    }
}

/// A timer's steps as the store holds them.
public enum Steps {
    /// Reads the JSON text of a `steps` attribute.
    public static func decode(_ text: String) throws(TimerInputError) -> [Step] {
        let value: JSONValue
        do { value = try JSONText.parse(text) } catch { throw TimerInputError("the steps are not JSON: \(error)") }
        guard let items = value.arrayValue else { throw TimerInputError("the steps are not a JSON array") }
        var steps: [Step] = []
        for (i, item) in items.enumerated() {
            guard let members = item.objectValue, let label = item["label"]?.stringValue,
                  let seconds = item["seconds"]?.int64Value, seconds > 0, seconds <= Int64(DurationText.maximum)
            else { throw TimerInputError("step \(i + 1) needs a label and a positive number of seconds") }
            steps.append(Step(label: label, seconds: Int(seconds), extra: members.filter { $0.0 != "label" && $0.0 != "seconds" }))
        }
        return steps
    }

    /// The JSON text of `steps`: label, then seconds, then any other members.
    public static func encode(_ steps: [Step]) -> String {
        JSONValue.array(steps.map { s in
            .object([("label", .string(s.label)), ("seconds", .number(String(s.seconds)))] + s.extra)
        }).minified
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s = s.dropFirst() }
        while s.last?.isWhitespace == true { s = s.dropLast() }
        return String(s)
    }
}
