import Foundation
import SeamClient
import SeamSystem
import SeamTestSupport
import XCTest

/// `seam watch` as a person sees it: on a real pseudo-terminal, beside a real seamd and its
/// supervised ticker; the screen is read back from the terminal's master side.
final class WatchTests: XCTestCase {
    let directory = TemporaryDirectory("watch")

    /// The master side of a pseudo-terminal and everything read from it.
    final class PseudoTerminal {
        let master: Int32
        let slavePath: String
        var output: [UInt8] = []

        init(rows: Int, columns: Int) throws {
            (master, slavePath) = try TerminalSize.openPseudoTerminal()
            _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
            XCTAssertTrue(TerminalSize.set(master, rows: rows, columns: columns))
        }

        deinit { close(master) }

        var text: String { String(decoding: output, as: UTF8.self) }

        /// Reads until `condition` holds on everything read so far, or `seconds` pass.
        @discardableResult
        func read(until seconds: Double, _ condition: (String) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition(text) {
                guard Date() < deadline else { return false }
                _ = UnixSocket.waitReadable(master, timeoutMilliseconds: 50)
                _ = try? UnixSocket.read(master, into: &output)
            }
            return true
        }

        /// The frames drawn so far (each starts with cursor-home), as lines of plain text; the
        /// highlighted lines are marked with a leading "*".
        var frames: [[String]] {
            text.components(separatedBy: "\u{1B}[H").dropFirst().map { frame in
                frame.components(separatedBy: "\r\n").map { line in
                    let lit = line.contains("\u{1B}[7m")
                    return (lit ? "*" : "") + line.replacingOccurrences(of: "\u{1B}\\[[0-9;?]*[A-Za-z]", with: "", options: .regularExpression)
                        .replacingOccurrences(of: "\r", with: "").replacingOccurrences(of: "\u{07}", with: "")
                }
            }
        }
    }

    func testTheLiveViewOnATerminal() throws {
        let config = directory.file("seamd.json")
        try Data("{}".utf8).write(to: URL(fileURLWithPath: config))
        let broker = try BrokerProcess(arguments: ["--config", config])
        defer { broker.stop() }
        let tty = try PseudoTerminal(rows: 12, columns: 72)
        let pid = try Processes.spawn(Executables.path("seam"), arguments: ["watch", "--socket", broker.socketPath],
                                      environment: ["TERM": "xterm", "HOME": directory.path, "PATH": "/usr/bin:/bin"],
                                      descriptors: [-1, -1, -1], placement: .init(newSession: true, terminal: tty.slavePath))
        defer { if Processes.isAlive(pid) { kill(pid, SIGKILL); _ = Processes.wait(pid) } }

        XCTAssertTrue(tty.read(until: 10) { $0.contains("no sessions") }, tty.text)
        XCTAssertTrue(tty.text.hasPrefix("\u{1B}[?1049h"), "the alternate screen")

        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        try c.call("org.seam.Timers.Flash", ["seconds": 2, "name": "Kettle"])
        try c.call("org.seam.Timers.Flash", ["seconds": 600, "name": "Bread"])
        XCTAssertTrue(tty.read(until: 5) { $0.contains("Kettle  ▶ running") && $0.contains("Bread") }, tty.text)
        // The countdown moves with the clock, not with calls: a later frame shows less time left.
        let counting = tty.read(until: 3) { _ in
            tty.frames.contains { $0.contains { $0.hasPrefix("Bread ") && $0.contains("9:58 left") } }
        }
        XCTAssertTrue(counting, "\(tty.frames.last ?? [])")

        // Kettle finishes (the supervised ticker advances it): the bell, and a highlighted line.
        XCTAssertTrue(tty.read(until: 6) { $0.contains("\u{07}") }, tty.text)
        XCTAssertTrue(tty.read(until: 2) { _ in tty.frames.last?.contains { $0.hasPrefix("*Kettle") && $0.contains("✓ finished") } ?? false },
                      "\(tty.frames.last ?? [])")

        // A narrower terminal: the next frames fit it.
        tty.output = []
        XCTAssertTrue(TerminalSize.set(tty.master, rows: 6, columns: 30))
        XCTAssertTrue(tty.read(until: 3) { _ in tty.frames.count >= 2 }, tty.text)
        let frame = try XCTUnwrap(tty.frames.last)
        XCTAssertLessThanOrEqual(frame.count, 6, "\(frame)")
        for line in frame { XCTAssertLessThanOrEqual(line.replacingOccurrences(of: "*", with: "").count, 30, line) }
        XCTAssertTrue(frame[0].hasPrefix("seam watch"), "\(frame)")

        kill(pid, SIGINT)
        XCTAssertEqual(Processes.wait(pid, timeout: 5), .status(0))
        tty.read(until: 1) { $0.contains("\u{1B}[?1049l") }
        XCTAssertTrue(tty.text.hasSuffix("\u{1B}[?25h\u{1B}[?1049l"), "the screen and cursor are given back")
    }

    /// Not a terminal: one plain line per event.
    func testPlainLinesWhenTheOutputIsNotATerminal() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let first = try XCTUnwrap(try c.call("org.seam.Timers.Flash", ["seconds": 60, "name": "Soup", "note": "hot"])["session"]?.stringValue)
        let outPath = directory.file("watch.out")
        let out = try FileSystem.openForAppending(outPath)
        let pid = try Processes.spawn(Executables.path("seam"), arguments: ["watch", "--socket", broker.socketPath],
                                      environment: ["PATH": "/usr/bin:/bin"], descriptors: [-1, out, out])
        close(out)
        func written() -> String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }
        func waitFor(_ text: String) -> Bool {
            let deadline = Date().addingTimeInterval(5)
            while !written().contains(text) && Date() < deadline { usleep(20_000) }
            return written().contains(text)
        }
        XCTAssertTrue(waitFor("now: Soup  ▶ running"), written())
        XCTAssertTrue(waitFor("left  “hot”\n"), "the note ends the line: \(written())")
        try c.call("org.seam.Timers.Pause", ["session": .string(first)])
        XCTAssertTrue(waitFor("paused: Soup  ‖ paused"), written())
        try c.call("org.seam.Timers.Stop", ["session": .string(first)])
        XCTAssertTrue(waitFor("finished: Soup  ✓ finished"), written())
        kill(pid, SIGTERM)
        XCTAssertEqual(Processes.wait(pid, timeout: 5), .status(0))
        XCTAssertFalse(written().contains("\u{1B}"), "no escape sequences in plain output")
        XCTAssertEqual(written().split(separator: "\n").count, 3, written())
    }
}
