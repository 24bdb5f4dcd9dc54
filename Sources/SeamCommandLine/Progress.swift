/// Progress of long work, on stderr: on a terminal, a bar redrawn in place; anywhere else (a
/// pipe, a log, a file) one plain line each time the phase changes — no bar, no carriage
/// return, no escape sequence.
public final class Progress {
    /// Whether stderr is a terminal (the bar), unless the caller says.
    public let interactive: Bool
    private var lastPhase: String?
    private var drew = false

    public init(interactive: Bool = Terminal.stderrIsTerminal) { self.interactive = interactive }

    /// Shows where the work is: `label` ("Local copying Session") at `fraction` (0 to 1), with
    /// `detail` ("120000/290000 rows, 3 s left") beside the bar. Off a terminal a line is
    /// written only when `phase` (the label, unless given) differs from the last one shown.
    public func show(_ label: String, fraction: Double, detail: String = "", phase: String? = nil) {
        if interactive {
            Terminal.progress("\r\u{1B}[K\(label) \(Terminal.bar(fraction))" + (detail.isEmpty ? "" : " \(detail)"))
            drew = true
        } else {
            let key = phase ?? label
            if key != lastPhase { Terminal.error("\(label)…") }
            lastPhase = key
        }
    }

    /// Ends the bar's line (after the last `show`; nothing off a terminal).
    public func end() {
        if drew { Terminal.progress("\n") }
        drew = false
    }
}
