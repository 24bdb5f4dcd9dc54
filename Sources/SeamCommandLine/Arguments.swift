/// A command line split into options, flags and positional arguments.
///
/// Understands `--name value`, `--name=value`, `-x` and `--` (everything after is positional).
/// Options named repeatable may repeat (`--step a=1 --step b=2`); another given twice is an
/// error. Unknown options are an error that names them, and the known one meant when it is near.
/// A dash followed by a digit (`-5`, `-5m`) is positional: a negative number for the command to
/// judge (and refuse in its own words), not an option no command has.
public struct Arguments: Sendable {
    public struct UsageError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public private(set) var positional: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments` given the names (without dashes) of options that take a value and of
    /// flags that do not, and of the options that may be given more than once (nil: all may).
    /// `help` and `h` are always flags.
    public init(_ arguments: [String], options: Set<String> = [], flags knownFlags: Set<String> = [],
                repeatable: Set<String>? = nil) throws(UsageError) {
        let knownFlags = knownFlags.union(["help", "h"])
        var i = 0
        var rest = false
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if rest || !arg.hasPrefix("-") || arg == "-" || Self.isNegativeNumber(arg) {
                positional.append(arg)
                continue
            }
            if arg == "--" { rest = true; continue }
            var name = String(arg.drop(while: { $0 == "-" }))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if knownFlags.contains(name) {
                guard inline == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if options.contains(name) {
                if let repeatable, !repeatable.contains(name), values[name] != nil {
                    throw UsageError("--\(name) is given twice; it takes one value")
                }
                if let inline {
                    values[name, default: []].append(inline)
                } else {
                    guard i < arguments.count else { throw UsageError("--\(name) needs a value") }
                    values[name, default: []].append(arguments[i])
                    i += 1
                }
            } else {
                let known = (options.union(knownFlags).subtracting(["h"])).map { "--" + $0 }
                throw UsageError("unknown option \(Terminal.printable(arg))\(Suggestions.didYouMean(arg, among: known))")
            }
        }
    }

    /// `-5`, `-1.5`, `-5m`: a dash, then a digit.
    static func isNegativeNumber(_ arg: String) -> Bool {
        guard arg.hasPrefix("-"), let second = arg.dropFirst().first else { return false }
        return ("0"..."9").contains(second)
    }

    public func flag(_ name: String) -> Bool { flags.contains(name) }
    public func value(_ name: String) -> String? { values[name]?.last }
    public func values(_ name: String) -> [String] { values[name] ?? [] }
    public var wantsHelp: Bool { flag("help") || flag("h") }

    /// The integer value of option `name`, or an error that says what was wrong.
    public func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError("--\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return n
    }
}
