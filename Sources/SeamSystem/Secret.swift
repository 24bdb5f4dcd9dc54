import Glibc

/// Reading a password: one line from standard input, without echo when it is a terminal.
public enum Secret {
    /// The line (without its newline), or nil at end of input. On a terminal, `prompt` goes to
    /// standard error and what is typed is not shown.
    public static func readLine(prompt: String) -> String? {
        let terminal = isatty(0) == 1
        var saved = termios()
        if terminal {
            Descriptors.write(2, prompt)
            tcgetattr(0, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            if terminal {
                tcsetattr(0, TCSAFLUSH, &saved)
                Descriptors.write(2, "\n")
            }
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == 10 { break }
            bytes.append(byte)
            if bytes.count > 4096 { break }
        }
        if bytes.last == 13 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
