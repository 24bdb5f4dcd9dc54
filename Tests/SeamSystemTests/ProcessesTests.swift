import SeamSystem
import XCTest

/// `Processes.run`: a helper program's output and exit, read whole.
final class ProcessesTests: XCTestCase {
    func testRunReadsStandardOutputAndErrorTogetherAndTheExit() throws {
        let (exit, output) = try Processes.run("/bin/sh", arguments: ["-c", "echo out; echo err >&2; exit 3"], environment: [:])
        XCTAssertEqual(exit, .status(3))
        XCTAssertFalse(exit.succeeded)
        XCTAssertEqual(String(decoding: output, as: UTF8.self), "out\nerr\n")
    }

    /// More than a pipe holds (64 KiB): read while the child writes, or both would wait for ever.
    func testRunReadsMoreOutputThanAPipeHolds() throws {
        let (exit, output) = try Processes.run("/bin/sh", arguments: ["-c", "head -c 1000000 /dev/zero"], environment: [:])
        XCTAssertTrue(exit.succeeded)
        XCTAssertEqual(output.count, 1_000_000)
    }

    func testRunPassesTheEnvironmentItIsGivenAndNoOther() throws {
        let (_, output) = try Processes.run("/usr/bin/env", arguments: [], environment: ["SEAM_PROCESSES_TEST": "yes"])
        XCTAssertEqual(String(decoding: output, as: UTF8.self), "SEAM_PROCESSES_TEST=yes\n")
    }

    func testAProgramThatCannotRunSaysSo() {
        XCTAssertThrowsError(try Processes.run("/nonexistent/program", arguments: [], environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/program"), "\(error)")
        }
    }
}
