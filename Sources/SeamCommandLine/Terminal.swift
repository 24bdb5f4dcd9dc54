import SeamSystem

/// Output helpers for command-line tools: stderr, exit codes, whether stdout is a terminal.
public enum Terminal {
    /// Exit status for a usage error (as `sysexits.h`'s EX_USAGE).
    public static let usageError: Int32 = 64

    public static func error(_ message: String) {
        var line = message
        if !line.hasSuffix("\n") { line += "\n" }
        write(2, line)
    }

    /// Writes all of `text` to file descriptor `fd`.
    public static func write(_ fd: Int32, _ text: String) { Descriptors.write(fd, text) }

    /// Ends the process with `status`, what `print` buffered written first.
    public static func exit(_ status: Int32) -> Never { Processes.exit(status) }

    /// Pushes what `print` buffered to standard output now (a stream read by a pipe).
    public static func flushOutput() { Descriptors.flushOutput() }

    /// Prints `tool: message` on stderr and exits with `status`.
    public static func fail(_ tool: String, _ message: String, status: Int32 = 1) -> Never {
        error("\(tool): \(message)")
        Processes.exit(status)
    }

    public static var stdoutIsTerminal: Bool { TerminalSize.isTerminal(1) }
    public static var stderrIsTerminal: Bool { TerminalSize.isTerminal(2) }
    public static var stdinIsTerminal: Bool { TerminalSize.isTerminal(0) }

    /// Writes `text` to stderr without a newline (for progress lines that redraw with `\r`).
    public static func progress(_ text: String) {
        write(2, text)
    }

    /// A bar such as `[#######.............]  35%`.
    public static func bar(_ fraction: Double, width: Int = 30) -> String {
        let f = max(0, min(1, fraction.isNaN ? 0 : fraction))
        let filled = Int((f * Double(width)).rounded(.down))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + String(Int((f * 100).rounded(.down))).leftPadded(to: 3) + "%"
    }
}

extension Terminal {
    /// `text` safe to show on a terminal: every control character (C0, DEL, C1) and every
    /// invisible format character as `\u{XX}`. Names and notes come from the store, which any
    /// plugin or another machine may have written; an escape sequence in one must not retitle the
    /// window, clear the screen or forge a line of output, and a right-to-left override (U+202E)
    /// or isolate must not reorder the rest of the line. The joiners that build emoji (U+200D, and
    /// the tag characters of flags) are kept.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: mustEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if mustEscape(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func mustEscape(_ s: Unicode.Scalar) -> Bool {
        if s.value < 0x20 || (0x7F...0x9F).contains(s.value) { return true }
        guard s.value >= 0xAD, s.properties.generalCategory == .format else { return false }
        return s.value != 0x200D && !(0xE0020...0xE007F).contains(s.value)
    }
}

extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
