import Foundation
import SeamTestSupport
import XCTest

/// The man pages and shell completions in the repository are what each tool's command spec
/// generates: a command, option or line of prose changed without `scripts/generate-docs` fails
/// here, with the first line that differs.
final class GeneratedDocsTests: XCTestCase {
    static let tools = ["seam", "seamd", "seam-migrate", "seam-fixture", "seam-sync", "seam-ticker", "seam-metrics"]
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testTheCommittedFilesAreWhatTheSpecsGenerate() throws {
        for tool in Self.tools {
            for (kind, path) in [("man", "man/\(tool).1"), ("bash", "completions/\(tool).bash"), ("zsh", "completions/_\(tool)")] {
                let generated = try Executables.run(tool, ["--generate", kind])
                XCTAssertEqual(generated.status, 0, "\(tool) --generate \(kind): \(generated.stderr)")
                let committed = (try? String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)) ?? ""
                guard generated.stdout != committed else { continue }
                let a = committed.split(separator: "\n", omittingEmptySubsequences: false)
                let b = generated.stdout.split(separator: "\n", omittingEmptySubsequences: false)
                let line = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
                XCTFail("\(path) is not what `\(tool) --generate \(kind)` writes (run scripts/generate-docs); line \(line + 1): "
                        + "committed '\(line < a.count ? a[line] : "<end>")', generated '\(line < b.count ? b[line] : "<end>")'")
            }
        }
    }

    /// Each page renders in groff without a warning.
    func testEveryManPageRendersWithoutAWarning() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/bin/groff"), "groff is not installed")
        for tool in Self.tools {
            let page = Self.root.appendingPathComponent("man/\(tool).1").path
            let r = try Executables.runTool("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", page], environment: ["LC_ALL": "C.UTF-8"])
            XCTAssertEqual(r.stdout + r.stderr, "", page)
        }
    }

    /// seam's bash completion asks a running seamd for names: the timers for `seam start`, the
    /// groups for `--group`, with a name holding a space quoted for the shell.
    func testTheBashCompletionOffersNamesFromSeamd() throws {
        let broker = try BrokerProcess(arguments: ["--no-roles"])
        defer { _ = broker.stop() }
        let seam = Executables.path("seam")
        for arguments in [["group", "add", "Kitchen"], ["timer", "add", "Green tea", "--step", "s=3m"]] {
            let r = try Executables.run("seam", arguments + ["--socket", broker.socketPath])
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        func offered(_ line: String) throws -> [String] {
            let script = Self.root.appendingPathComponent("completions/seam.bash").path
            let run = try ShellCompletion.bash(script: script, function: "_seam", line: line)
            XCTAssertEqual(run.errors, "", line)
            return run.offered
        }
        XCTAssertEqual(try offered("\(seam) --socket \(broker.socketPath) start G"), ["Green\\ tea"])
        XCTAssertEqual(try offered("\(seam) timer add X --socket \(broker.socketPath) --group K"), ["Kitchen"])
        XCTAssertEqual(try offered("\(seam) ti"), ["timer"])
        XCTAssertEqual(try offered("\(seam) timer a"), ["add"])
        XCTAssertEqual(try offered("\(seam) ls --j"), ["--json"])
        XCTAssertEqual(try offered("\(seam) query T"), ["Timer"])
        XCTAssertEqual(try offered("\(seam) watch --bell "), ["steps", "end", "off"])
    }
}
