import Foundation
import SeamContext
import SeamSchema
import SeamStore
import SeamTestSupport
import SeamTimers
import XCTest

/// A save in steps (`Context+Steps`) is one save — the same rows, change set, history and one
/// sequence number as at once — while between its steps the other store takes saves, and reads
/// of its own store see only what is committed.
final class SteppedSaveTests: ContextTestCase {
    private func timers(_ n: Int, prefix: String) -> SaveRequest {
        SaveRequest((0..<n).map { i in .insert(entity: "Timer", values: ["name": .string("\(prefix) \(i)"), "sortOrder": .integer(Int64(i))]) })
    }

    /// Steps `s` to its end; the change set it committed.
    @discardableResult
    private func finish(_ s: SteppedSave, rows: Int = 7, between: () throws -> Void = {}) throws -> ChangeSet? {
        while true {
            switch try context.step(s, rows: rows) {
            case .unfinished: try between()
            case .finished(let set): return set
            case .readyToCommit(let commit):
                commit.run()
                return try context.completeCommit(s)
            }
        }
    }

    private func count(_ entity: String) throws -> Int { try context.count(FetchRequest(entity)) }

    func testASaveInStepsIsOneSaveWhileTheOtherStoreSavesAndReadsSeeOnlyWhatIsCommitted() throws {
        try addTimer("before")
        let before = context.sequence
        guard let s = try context.beginSteps(timers(100, prefix: "big"), author: "plugin") else { return XCTFail("not begun in steps") }
        XCTAssertEqual(context.steppedStore, "Cloud")
        var sessionSequences: [Int64] = []
        let set = try finish(s) {
            // The other store takes saves between the steps; this store's reads see the one timer.
            let uuid = try addSession(timer: nil)
            sessionSequences.append(context.sequence)
            XCTAssertEqual(try count("Timer"), 1, "nothing of the save in steps is seen before it commits")
            XCTAssertNotNil(try context.row("Session", uuid))
        }
        XCTAssertNil(context.steppedStore)
        guard let set else { return XCTFail("it changed nothing") }
        XCTAssertGreaterThan(sessionSequences.count, 10, "the other store saved between many steps")
        XCTAssertEqual(sessionSequences, Array(before + 1...before + Int64(sessionSequences.count)))
        XCTAssertEqual(set.sequence, before + Int64(sessionSequences.count) + 1, "its number is taken at its last step")
        XCTAssertEqual(set.changes.count, 100)
        XCTAssertEqual(set.changes.map { $0.new?["name"]?.stringValue }, (0..<100).map { "big \($0)" })
        XCTAssertEqual(try count("Timer"), 101)
        let history = try context.history(since: before)
        XCTAssertEqual(history.map(\.sequence), [set.sequence], "one history entry, for Cloud's save alone")
        XCTAssertEqual(history.first?.changes.map(\.uuid), set.changes.map(\.uuid), "written with its rows, in their order")
        XCTAssertEqual(history.first?.changes.map { $0.new?["name"]?.stringValue }, set.changes.map { $0.new?["name"]?.stringValue })
        XCTAssertEqual(history.first?.author, "plugin")
        XCTAssertEqual(context.changes(since: before)?.map(\.sequence).last, set.sequence)

        // The same rows saved at once make the same kind of change set.
        let atOnce = try XCTUnwrap(try context.save(timers(100, prefix: "once")))
        XCTAssertEqual(atOnce.changes.map(\.changedKeys), set.changes.map(\.changedKeys))
    }

    func testAFailureAtAnyStepLeavesNothing() throws {
        let taken = try addTimer("taken")
        var request = timers(100, prefix: "big")
        request.operations.insert(.insert(entity: "Timer", values: ["uuid": .uuid(taken), "name": .string("twin")]), at: 70)
        let before = context.sequence
        guard let s = try context.beginSteps(request, author: "plugin") else { return XCTFail("not begun in steps") }
        expectError({ try finish(s) }) { kind in
            if case .duplicate(entity: "Timer", uuid: taken) = kind { return true }
            return false
        }
        XCTAssertNil(context.steppedStore)
        XCTAssertEqual(try count("Timer"), 1, "rolled back whole")
        XCTAssertEqual(context.sequence, before)
        try addTimer("after")  // the store takes saves again
        XCTAssertEqual(try count("Timer"), 2)
    }

    func testASaveIntoTheStoreItHoldsIsRefusedAndClosingTheStoreEndsIt() throws {
        guard let s = try context.beginSteps(timers(100, prefix: "big"), author: "plugin") else { return XCTFail("not begun in steps") }
        _ = try context.step(s, rows: 10)
        expectError({ try addTimer("meanwhile") }) { kind in
            if case .storeUnavailable(store: "Cloud", _, _) = kind { return true }
            return false
        }
        XCTAssertNil(try context.beginSteps(timers(100, prefix: "second"), author: "plugin"), "one save in steps at a time")
        context.close("Cloud", reason: "a test closed it")
        expectError({ try finish(s) }) { kind in
            if case .storeUnavailable(store: "Cloud", _, let reason) = kind { return reason == "a test closed it" }
            return false
        }
        XCTAssertNil(context.steppedStore)
    }

    /// Steps `s` (its commit to run elsewhere) until its commit is ready.
    private func stepToCommit(_ s: SteppedSave) throws -> SteppedCommit {
        s.commitsElsewhere = true
        while true {
            switch try context.step(s, rows: 16) {
            case .unfinished: continue
            case .finished: throw XCTSkip("committed here")
            case .readyToCommit(let commit): return commit
            }
        }
    }

    /// Runs `commit` on a thread of its own, as the broker does; returns once it ran.
    private func runElsewhere(_ commit: SteppedCommit, while here: () throws -> Void = {}) rethrows {
        let ran = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            commit.run()
            ran.signal()
        }
        try here()
        ran.wait()
    }

    func testACommitRunElsewhereHoldsTheSequenceNumberUntilItIsCompleted() throws {
        try addTimer("before")
        let before = context.sequence
        guard let s = try context.beginSteps(timers(300, prefix: "big"), author: "plugin") else { return XCTFail("not begun in steps") }
        let commit = try stepToCommit(s)
        XCTAssertTrue(context.sequenceClaimed)
        XCTAssertEqual(commit.set.sequence, before + 1, "its number is taken")
        // No save commits while the number is out, into either store: it would take a later one
        // and be told of first.
        for attempt in [{ try self.addSession(timer: nil) }, { try self.addTimer("meanwhile") }] {
            expectError({ _ = try attempt() }) { kind in
                if case .storeUnavailable(store: "Cloud", _, _) = kind { return true }
                return false
            }
        }
        try runElsewhere(commit)
        XCTAssertEqual(context.sequence, before, "not yet told")
        let set = try XCTUnwrap(try context.completeCommit(s))
        XCTAssertEqual(set.sequence, before + 1)
        XCTAssertFalse(context.sequenceClaimed)
        XCTAssertNil(context.steppedStore)
        XCTAssertEqual(context.sequence, before + 1)
        XCTAssertEqual(try count("Timer"), 301)
        XCTAssertEqual(try context.history(since: before).map(\.sequence), [before + 1], "its history entry, written there")
        XCTAssertEqual(context.changes(since: before)?.map(\.sequence), [before + 1])
        try addSession(timer: nil)
        XCTAssertEqual(context.sequence, before + 2, "saves go on after it")
        XCTAssertEqual(try context.completeCommit(s)?.sequence, before + 1, "completing it again changes nothing")
        XCTAssertEqual(context.sequence, before + 2)
    }

    func testClosingTheStoreWhileItsCommitRunsElsewhereWaitsForIt() throws {
        let before = context.sequence
        guard let s = try context.beginSteps(timers(300, prefix: "big"), author: "plugin") else { return XCTFail("not begun in steps") }
        let commit = try stepToCommit(s)
        runElsewhere(commit) {
            // The store closes at once: it waits for the commit, which then stands.
            context.close("Cloud", reason: "a test closed it")
        }
        XCTAssertNil(context.steppedStore)
        XCTAssertFalse(context.sequenceClaimed)
        XCTAssertEqual(context.sequence, before + 1, "the commit ran, so it counts")
        XCTAssertEqual(try context.completeCommit(s)?.sequence, before + 1, "its owner learns of it as ever")
        try context.reopen("Cloud")
        XCTAssertEqual(try count("Timer"), 300)
    }

    func testWhatCannotGoInStepsIsSavedAtOnce() throws {
        let t = try addTimer("t")
        XCTAssertNil(try context.beginSteps(SaveRequest([.delete(entity: "Timer", uuid: t)]), author: "cli"), "deletes may cascade")
        var twoStores = timers(10, prefix: "x")
        twoStores.insert("Session", ["state": .string("running"), "startedAt": .date(1)])
        XCTAssertNil(try context.beginSteps(twoStores, author: "cli"), "two stores")
        XCTAssertNil(try context.beginSteps(SaveRequest(), author: "cli"), "nothing")
        let memory = try Context(inMemory: TimerApp.schema)
        XCTAssertNil(try memory.beginSteps(timers(10, prefix: "m"), author: "cli"), "in memory: one connection")
    }
}
