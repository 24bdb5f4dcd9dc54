import Foundation
import SeamSystem
import SeamTestSupport
import XCTest

/// `DirectoryWatch`, which spares the store file check a `stat` before each save: it reports a
/// watched name made, removed or renamed over, ignores the others, and reports every name when
/// the directory itself moves.
final class DirectoryWatchTests: XCTestCase {
    func testItReportsWhatHappensToTheNamesItWatches() throws {
        let tmp = TemporaryDirectory("seam-watch")
        let dir = tmp.file("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/Local.sqlite", contents: Data("a".utf8))
        let watch = try DirectoryWatch(dir, names: ["Cloud.sqlite", "Local.sqlite"])
        XCTAssertEqual(try watch.changed(), [], "nothing yet")
        // SQLite's own files beside the store, and others: not reported.
        _ = FileManager.default.createFile(atPath: dir + "/Local.sqlite-wal", contents: Data("w".utf8))
        try FileManager.default.removeItem(atPath: dir + "/Local.sqlite-wal")
        XCTAssertEqual(try watch.changed(), [])
        // Writing into a store file is not a change of file.
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: dir + "/Local.sqlite"))
        try handle.write(contentsOf: Data("more".utf8))
        try handle.close()
        XCTAssertEqual(try watch.changed(), [])
        // Renamed over, removed, made: reported once each time.
        _ = FileManager.default.createFile(atPath: dir + "/other", contents: Data("b".utf8))
        XCTAssertEqual(rename(dir + "/other", dir + "/Local.sqlite"), 0)
        XCTAssertEqual(try watch.changed(), ["Local.sqlite"])
        XCTAssertEqual(try watch.changed(), [])
        try FileManager.default.removeItem(atPath: dir + "/Local.sqlite")
        _ = FileManager.default.createFile(atPath: dir + "/Cloud.sqlite", contents: nil)
        XCTAssertEqual(try watch.changed(), ["Cloud.sqlite", "Local.sqlite"])
        // The directory itself moved: anything may have changed.
        XCTAssertEqual(rename(dir, tmp.file("moved")), 0)
        XCTAssertEqual(try watch.changed(), ["Cloud.sqlite", "Local.sqlite"])
    }
}
