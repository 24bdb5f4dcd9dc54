import SeamSystem

/// Levelled log lines on stderr: `seamd[pid]: level: message`.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var name: String { String(describing: self) }
        public init?(name: String) {
            guard let l = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = l
        }
    }

    public var level: Level
    public var tag: String
    /// Where a line goes (stderr unless told).
    public var write: @Sendable (String) -> Void

    public init(tag: String, level: Level = .info, write: @escaping @Sendable (String) -> Void = { Descriptors.write(2, $0) }) {
        self.tag = tag
        self.level = level
        self.write = write
    }

    public func log(_ l: Level, _ message: @autoclosure () -> String) {
        guard l >= level else { return }
        write("\(tag)[\(Environment.processID)]: \(l.name): \(message())\n")
    }

    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }
}

/// A duration as the log says it: tenths under ten seconds, whole seconds above.
func describeSeconds(_ s: Double) -> String {
    s < 10 ? "\(Double(Int(s * 10)) / 10) s" : "\(Int(s)) s"
}
