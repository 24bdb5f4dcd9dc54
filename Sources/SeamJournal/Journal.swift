import CSystemd

/// systemd's journal, natively (the one place libsystemd is called): entries of named fields,
/// so that `journalctl SEAM_ROLE=ticker` finds a role's lines, and whether this process's
/// standard error is already the journal's stream (then its lines are better sent as entries).
public enum Journal {
    /// Whether standard error is the stream systemd connected to the journal (`JOURNAL_STREAM`
    /// names its device and inode): a service that writes there is better off sending entries.
    public static var standardErrorIsJournal: Bool { seam_stderr_is_journal() == 1 }

    /// Syslog's priorities, as the journal's `PRIORITY` field holds them.
    public enum Priority: Int, Sendable {
        case error = 3, warning = 4, info = 6, debug = 7
    }

    /// Sends one entry: `MESSAGE`, `PRIORITY`, `SYSLOG_IDENTIFIER` and `fields` (names of
    /// capitals, digits and `_`, not starting with `_`; others are left out, as the journal would
    /// drop them). False when the journal did not take it (no journald listening).
    @discardableResult
    public static func send(_ message: String, priority: Priority, identifier: String, fields: [(String, String)] = []) -> Bool {
        var entries = ["MESSAGE=" + message, "PRIORITY=\(priority.rawValue)", "SYSLOG_IDENTIFIER=" + identifier]
        for (name, value) in fields.prefix(12) where isValidFieldName(name) { entries.append(name + "=" + value) }
        // Every field in one buffer, each reached by its offset: the buffer stays in place while
        // the C call runs.
        var all: [UInt8] = []
        var offsets: [Int] = [], lengths: [Int] = []
        for entry in entries {
            offsets.append(all.count)
            lengths.append(entry.utf8.count)
            all += entry.utf8
        }
        return all.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return pointers.withUnsafeBufferPointer { p in
                lengths.withUnsafeBufferPointer { l in seam_journal_send(p.baseAddress, l.baseAddress, Int32(entries.count)) == 0 }
            }
        }
    }

    /// A field name the journal accepts from a client: `[A-Z0-9_]`, 1 to 64 of them, not
    /// starting with `_` (those are the journal's own) or a digit.
    public static func isValidFieldName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 64, first != UInt8(ascii: "_"), !(0x30...0x39).contains(first) else {
            return false
        }
        return name.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "_") }
    }
}
