import Foundation
import SeamClient
import SeamStore
import SeamTestSupport
import XCTest

/// A store seamd serves, opened by another process too (a backup, an `sqlite3` shell).
final class SharedFileTests: XCTestCase {
    /// Another process that reads a store and closes its connection leaves seamd's WAL alone:
    /// seamd's later commits stay in the file every process sees. (seamd read the store's header
    /// by opening the file again and closing it, which dropped the locks SQLite held on it for the
    /// whole process; the other process's close then took the store for unused, folded the WAL
    /// in and deleted it, and seamd went on committing into a deleted file: invisible to every
    /// other process, and lost in a crash.)
    func testAnotherProcessReadingAStoreLeavesSeamdsWALAlone() throws {
        let broker = try BrokerProcess()
        defer { broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        _ = try c.save([.insert(entity: "Timer", values: ["name": "One"])])
        let cloud = broker.dataDirectory + "/Cloud.sqlite"
        func names() throws -> [String] {
            // Read-write, as a shell opens it: the last connection of a process to close folds
            // the WAL in and deletes it, when it can lock the file alone.
            let reader = try Database(path: cloud, options: { var o = Database.Options(); o.create = false; return o }())
            defer { reader.close() }
            return try reader.rows("SELECT name FROM Timer ORDER BY name", types: [.string]).compactMap { $0[0].stringValue }
        }
        XCTAssertEqual(try names(), ["One"])
        _ = try c.save([.insert(entity: "Timer", values: ["name": "Two"])])
        XCTAssertTrue(FileManager.default.fileExists(atPath: cloud + "-wal"), "the WAL seamd writes is still there")
        XCTAssertEqual(try names(), ["One", "Two"], "seamd's commit after the other process closed is in the file")
    }
}
