import Glibc
import SeamSystem
import XCTest

/// The event loop's upkeep between requests (`whenIdle`), which the checkpointer's catch-up
/// relies on. (SeamSystem has no test target of its own; its loop is tested here, beside the
/// checkpointer.)
final class EventLoopTests: XCTestCase {
    /// Upkeep runs only when it is due and nothing is ready: a readable descriptor is served
    /// first, whatever upkeep is waiting.
    func testUpkeepRunsOnlyWhenDueAndNothingIsReady() throws {
        let loop = try EventLoop()
        var pair: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        var log: [String] = []
        var due = true
        try loop.watch(pair[0], .read) { _ in
            var byte: UInt8 = 0
            _ = read(pair[0], &byte, 1)
            log.append("read \(byte)")
        }
        loop.whenIdle({ due }) {
            log.append("upkeep")
            due = false
        }
        var one: UInt8 = 1
        _ = write(pair[1], &one, 1)
        loop.after(0.05) {
            // Not due: the loop blocks rather than spinning; a byte arriving is still served.
            var two: UInt8 = 2
            _ = write(pair[1], &two, 1)
        }
        loop.after(0.1) { loop.stop() }
        loop.run()
        XCTAssertEqual(log, ["read 1", "upkeep", "read 2"])
    }
}
