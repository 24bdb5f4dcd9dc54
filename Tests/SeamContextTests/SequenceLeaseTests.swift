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

    /// Closes the context, writes `text` as the lease, and opens the directory again.
    private func reopen(withLease text: String) throws {
        context = nil
        try text.write(toFile: leasePath, atomically: true, encoding: .utf8)
        context = try Context(directory: temp.path, schema: TimerApp.schema)
    }

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
        XCTAssertEqual(try lease(), "3\nCloud 3\nLocal 0\n", "the last number, and each store's own")
    }

    /// A store restored from an older copy while the other holds the last number: level with
    /// the lease, but that store is below the number it closed with. A resume from the last
    /// number (a client that fetched then) must not find "nothing since".
    func testOneStoreRestoredFromAnOlderCopyIsFoundOut() throws {
        try addTimer("A")
        context = nil
        let older = temp.file("Cloud.older")
        try FileManager.default.copyItem(atPath: temp.file("Cloud.sqlite"), toPath: older)
        try reopen()
        try addTimer("B")
        try addSession(timer: nil)  // the last number is Local's
        context = nil
        XCTAssertEqual(try lease(), "3\nCloud 2\nLocal 3\n")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: temp.file("Cloud.sqlite" + suffix)) }
        try FileManager.default.copyItem(atPath: older, toPath: temp.file("Cloud.sqlite"))
        context = try Context(directory: temp.path, schema: TimerApp.schema)
        XCTAssertEqual(context.sequence, 4)
        XCTAssertTrue(context.recovered.contains { $0.contains("Cloud holds an older sequence number") }, "\(context.recovered)")
        XCTAssertNil(context.changes(since: 3))
    }

    /// A lease written while the stores were open (no store lines) is above every number used
    /// then: stores found level with it still lost what came after (a stop that was not clean,
    /// at full durability, then a store restored), and the numbers jump.
    func testStoresLevelWithALeaseWrittenWhileOpenAreBehindIt() throws {
        try addTimer("A")
        try reopen(withLease: "1\n")
        XCTAssertEqual(context.sequence, 2)
        XCTAssertNil(context.changes(since: 1))
    }

    /// A conditional save read before the numbers jumped cannot be checked against the history
    /// after it (what was lost, or restored, is not in it): refused as from history no longer
    /// kept. From after the jump, it holds. (Before, the history after the read was empty and
    /// the save went through over rows a restore had put back.)
    func testAConditionalSaveFromBeforeAJumpIsRefused() throws {
        let timer = try addTimer("Tea")
        let read = context.sequence
        try reopen(withLease: "1000\n")
        var stale = SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Green tea")])])
        stale.unchangedSince = read
        expectError({ try self.context.save(stale) }) {
            if case .historyForgotten(read, 1001) = $0 { return true } else { return false }
        }
        stale.unchangedSince = context.sequence
        XCTAssertNotNil(try context.save(stale), "read after the jump, it holds")
        try reopen()  // and the mark stays: a later purge (of less) does not lower it
        try context.purgeHistory(through: 5)
        stale = SaveRequest([.update(entity: "Timer", uuid: timer, values: ["name": .string("Black tea")])])
        stale.unchangedSince = read
        expectError({ try self.context.save(stale) }) {
            if case .historyForgotten(read, 1001) = $0 { return true } else { return false }
        }
    }

    /// The lease's text: what `SequenceLease` reads back is what it wrote; anything else is not a lease.
    func testTheLeaseTextRoundTripsAndAnythingElseIsRefused() {
        for lease in [SequenceLease(through: 0), SequenceLease(through: 7, stores: ["Cloud": 3, "Local": 7, "User_Data2": 1]),
                      SequenceLease(through: SequenceLease.maxNumber)] {
            XCTAssertEqual(SequenceLease(text: lease.text), lease, lease.text)
        }
        for text in ["", "\n", "12", "garbage\n", "-5\n", "+5\n", " 5\n", "5 \n", "12 13\n", "0x10\n", "\u{0}\u{1}",
                     "99999999999999999999999\n", "\(SequenceLease.maxNumber + 1)\n", "5\nCloud 7\n", "5\nCloud 1\nCloud 2\n",
                     "5\nCloud\n", "5\n 1\n", "5\nCl oud 1\n", "5\nCloud 1", "5\n\n", "٣\n"] {
            XCTAssertNil(SequenceLease(text: text), text.debugDescription)
        }
    }

    /// Stores behind the lease (one restored from an older copy, say): saves are numbered from
    /// past it, the open says why, and the stores keep the jump.
    func testStoresBehindTheLeaseAreNumberedFromPastIt() throws {
        try addTimer("A")
        try reopen(withLease: "1000\n")
        XCTAssertEqual(context.sequence, 1001)
        XCTAssertTrue(context.recovered.contains { $0.contains("below the 1000 that may have been told") }, "\(context.recovered)")
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
        for text in ["", "garbage\n", "-5\n", "12 13\n", "99999999999999999999999\n", "9223372036854775807\n", "\u{0}\u{1}"] {
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
