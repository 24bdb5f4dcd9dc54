import SeamJournal
import SeamSystem

/// Levelled log lines: on stderr as `seamd[pid]: level: message`, or, under systemd (standard
/// error is the journal's stream, or `SEAM_LOG=journal`), as journal entries with their priority
/// and Seam's fields (`SEAM_ROLE`, `SEAM_PID`, `SEAM_CONNECTION`, `SEAM_METHOD`).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var name: String { String(describing: self) }
        public init?(name: String) {
            guard let l = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = l
        }

        var priority: Journal.Priority {
            switch self {
            case .debug: .debug
            case .info: .info
            case .warning: .warning
            case .error: .error
            }
        }
    }

    /// What a line is about, beyond its text: the journal keeps each as a field to filter by.
    public struct Fields: Sendable {
        /// The role whose line it is (`ticker`, `plugin:NAME`); seamd's own lines are `seamd`'s.
        public var role: String?
        /// The process that wrote it, when not seamd.
        public var pid: Int32?
        /// The connection it concerns, as the log names one (`#12 (ticker)`).
        public var connection: String?
        /// The method it concerns (`org.seam.Store.Save`).
        public var method: String?

        public init(role: String? = nil, pid: Int32? = nil, connection: String? = nil, method: String? = nil) {
            self.role = role
            self.pid = pid
            self.connection = connection
            self.method = method
        }
    }

    public var level: Level
    public var tag: String
    /// Where a line goes (stderr unless told).
    public var write: @Sendable (String) -> Void
    /// Entries to the journal rather than lines to `write`.
    public var journal = false

    public init(tag: String, level: Level = .info, write: @escaping @Sendable (String) -> Void = { Descriptors.write(2, $0) }) {
        self.tag = tag
        self.level = level
        self.write = write
    }

    /// Whether this process should log to the journal: `SEAM_LOG=journal` or `stderr` say so;
    /// otherwise, whether standard error is the journal's stream (seamd run by systemd).
    public static var journalWanted: Bool {
        switch Environment.value("SEAM_LOG") {
        case "journal": true
        case "stderr": false
        default: Journal.standardErrorIsJournal
        }
    }

    public func log(_ l: Level, _ message: @autoclosure () -> String, _ fields: Fields = Fields()) {
        guard l >= level else { return }
        let text = message()
        if journal {
            var extra = [("SEAM_ROLE", fields.role ?? tag), ("SEAM_PID", String(fields.pid ?? Environment.processID))]
            if let c = fields.connection { extra.append(("SEAM_CONNECTION", c)) }
            if let m = fields.method { extra.append(("SEAM_METHOD", m)) }
            let identifier = fields.role.map { "\(tag)/\($0)" } ?? tag
            if Journal.send(text, priority: l.priority, identifier: identifier, fields: extra) { return }
            // No journal took it: the line is not lost.
        }
        let prefix = fields.role.map { "\($0): " } ?? ""
        write("\(tag)[\(Environment.processID)]: \(l.name): \(prefix)\(text)\n")
    }

    /// A role's line at the level it says (`tool: warning: …`, `warning: …`), else info.
    public static func level(ofRoleLine line: String) -> Level {
        let words = line.split(separator: " ", maxSplits: 2).prefix(2).map { $0.lowercased() }
        for level in [Level.error, .warning, .debug] where words.contains(level.name + ":") { return level }
        return .info
    }

    public func debug(_ m: @autoclosure () -> String, _ fields: Fields = Fields()) { log(.debug, m(), fields) }
    public func info(_ m: @autoclosure () -> String, _ fields: Fields = Fields()) { log(.info, m(), fields) }
    public func warning(_ m: @autoclosure () -> String, _ fields: Fields = Fields()) { log(.warning, m(), fields) }
    public func error(_ m: @autoclosure () -> String, _ fields: Fields = Fields()) { log(.error, m(), fields) }
}

/// A duration as the log says it: tenths under ten seconds, whole seconds above.
func describeSeconds(_ s: Double) -> String {
    s < 10 ? "\(Double(Int(s * 10)) / 10) s" : "\(Int(s)) s"
}
