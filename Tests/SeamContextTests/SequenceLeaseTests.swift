import Foundation
import SeamContext
import SeamSchema
import SeamTimers
import XCTest

/// The directory's sequence lease (`Context+Sequence`): how far numbers may have been handed
/// out, kept apart from the stores so that a store restored from an older copy is found out.
final class SequenceLeaseTests: ContextTestCase {
    private var leasePath: String { temp.file("sequence.lease") }

    private func lease() throws -> String { try String(contentsOfFile: leasePath, encoding: .utf8) }

    private func reopen() throws { context = nil; context = try Context(directory: temp.path, schema: TimerApp.schema) }

    /// Open, the lease runs a block ahead of the last save; a clean close leaves it level with
    /// the stores, so the next open numbers on from there and resumes go on as before.
    func testACleanCloseLeavesTheLeaseLevelWithTheStores() throws {
        XCTAssertEqual(try lease(), "\(Context.leaseBlock)\n", "taken at the first open")
        for name in ["A", "B", "C"] { try addTimer(name) }
        XCTAssertEqual(try lease(), "\(Context.leaseBlock)\n")
        try reopen()
        XCTAssertEqual(try lease(), "\(3 + Context.leaseBlock)\n", "taken again at open")
        XCTAssertEqual(context.sequence, 3)
        XCTAssertEqual(context.recovered, [])
        context = nil
        XCTAssertEqual(try lease(), "3\n")
    }

    /// Stores behind the lease (one restored from an older copy, say): saves are numbered from
    /// past it, the open says why, and the stores keep the jump.
    func testStoresBehindTheLeaseAreNumberedFromPastIt() throws {
        try addTimer("A")
        context = nil
        try "1000\n".write(toFile: leasePath, atomically: true, encoding: .utf8)
        context = try Context(directory: temp.path, schema: TimerApp.schema)
        XCTAssertEqual(context.sequence, 1001)
        XCTAssertTrue(context.recovered.contains { $0.contains("restored from an older copy") }, "\(context.recovered)")
        XCTAssertNil(context.changes(since: 1000), "a resume from the lease's last number gets a fresh result")
        try addTimer("B")
        XCTAssertEqual(context.sequence, 1002)
        try reopen()
        XCTAssertEqual(context.sequence, 1002)
        XCTAssertEqual(context.recovered, [])
    }

    /// A lease that cannot be read is taken as after an unclean close: the numbers jump as far,
    /// and the open says why. One that is not a file at all stops the open with its path.
    func testALeaseThatCannotBeReadIsTakenAsAnUncleanClose() throws {
        try addTimer("A")
        var expected = context.sequence
        for text in ["", "garbage\n", "-5\n", "12 13\n", "99999999999999999999999\n", "\u{0}\u{1}"] {
            context = nil
            try text.write(toFile: leasePath, atomically: true, encoding: .utf8)
            context = try Context(directory: temp.path, schema: TimerApp.schema)
            expected += Context.uncleanCloseJump + 1
            XCTAssertEqual(context.sequence, expected, "lease \(text.debugDescription)")
            XCTAssertTrue(context.recovered.contains { $0.contains("sequence lease") }, "\(context.recovered)")
        }
        context = nil
        try FileManager.default.removeItem(atPath: leasePath)
        try FileManager.default.createDirectory(atPath: leasePath, withIntermediateDirectories: false)
        XCTAssertThrowsError(try Context(directory: temp.path, schema: TimerApp.schema)) { error in
            XCTAssertTrue("\(error)".contains("sequence.lease"), "\(error)")
        }
    }

    /// A lease missing (a directory from before there was one) is written, with no jump.
    func testAMissingLeaseIsWrittenWithoutAJump() throws {
        try addTimer("A")
        context = nil
        try FileManager.default.removeItem(atPath: leasePath)
        context = try Context(directory: temp.path, schema: TimerApp.schema)
        XCTAssertEqual(context.sequence, 1)
        XCTAssertEqual(try lease(), "\(1 + Context.leaseBlock)\n")
    }
}
