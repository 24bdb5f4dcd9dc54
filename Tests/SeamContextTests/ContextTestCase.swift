import Foundation
import SeamContext
import SeamSchema
import SeamTestSupport
import SeamTimers
import XCTest

/// Runs tests against store files and then against the in-memory `Default` store: the seed's
/// rule, the same code paths for both.
class ContextTestCase: XCTestCase {
    var temp: TemporaryDirectory!
    var context: Context!

    /// Whether the current run uses the in-memory store.
    var inMemory = false

    override func setUpWithError() throws {
        temp = TemporaryDirectory("seam-context")
        context = try Context(directory: temp.path, schema: TimerApp.schema)
    }

    /// Runs `body` on a fresh file-backed context, then on a fresh in-memory one.
    func onFilesAndInMemory(_ body: () throws -> Void) throws {
        inMemory = false
        try body()
        inMemory = true
        context = try Context(inMemory: TimerApp.schema)
        try body()
    }

    override func tearDown() {
        context = nil
        temp = nil
    }

    /// Inserts a timer (and returns its uuid).
    @discardableResult
    func addTimer(_ name: String, group: String? = nil, sortOrder: Int64 = 0) throws -> String {
        let uuid = UUIDText.random()
        var values: [String: AttributeValue] = ["uuid": .uuid(uuid), "name": .string(name), "sortOrder": .integer(sortOrder),
                                                "steps": .json(#"[{"label":"go","seconds":60}]"#)]
        if let group { values["groupUUID"] = .uuid(group) }
        try context.save(SaveRequest([.insert(entity: "Timer", values: values)]))
        return uuid
    }

    /// Inserts a session for `timer` (nil: a flash session).
    @discardableResult
    func addSession(timer: String?, state: String = "running", startedAt: Double = 1_700_000_000) throws -> String {
        let uuid = UUIDText.random()
        try context.save(SaveRequest([.insert(entity: "Session", values: [
            "uuid": .uuid(uuid), "timerUUID": timer.map(AttributeValue.uuid) ?? .null, "state": .string(state),
            "startedAt": .date(startedAt),
        ])]))
        return uuid
    }

    func expectError(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line,
                     _ check: (ContextError.Kind) -> Bool) {
        do {
            try body()
            XCTFail("expected an error", file: file, line: line)
        } catch let e as ContextError {
            XCTAssertTrue(check(e.kind), "unexpected \(e)", file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }
}
