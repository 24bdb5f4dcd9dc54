import Foundation
import SeamStore
import SeamSystem
import SeamTestSupport
import XCTest

/// The checkpointer's read-ahead: pages of the WAL that the kernel dropped from its cache are
/// read back before the writer overwrites them (a frame ends part way into a page, and a
/// dropped page would be read on the writer's thread, in the commit).
final class WALReadAheadTests: XCTestCase {
    func testDroppedPagesOfTheWALAreReadBackAfterTheNextCommits() throws {
        let directory = TemporaryDirectory("wal-read-ahead")
        let path = directory.file("store.sqlite")
        var options = Database.Options()
        options.durability = .normal
        let db = try Database(path: path, options: options)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        // A threshold no test reaches: the WAL only grows, as between two of a writer's restarts.
        let checkpointer = try Checkpointer(db, durability: .normal, threshold: 100_000)
        defer { checkpointer.stop(); db.close() }
        let body = String(repeating: "x", count: 3000)
        var id: Int64 = 0
        func insert(_ rows: Int) throws {
            for _ in 0..<rows {
                id += 1
                try db.run("INSERT INTO t (id, body) VALUES (?, ?)", [.integer(id), .string(body)])
            }
        }
        try insert(800)  // about 3 MiB of WAL
        let wal = path + "-wal"
        let dropped = 2 << 20
        try FileFlusher(path: wal).sync()  // clean pages, which the kernel may drop
        XCTAssertTrue(Self.drop(wal, length: dropped))
        let before = try Self.residentFraction(wal, length: dropped)
        XCTAssertLessThan(before, 0.5, "the kernel kept the pages it was told it may drop")

        try insert(100)  // the WAL's end moves on by more than the read-ahead's step
        try eventually(10, "the start of the WAL, where it starts over, is back in the page cache") {
            try Self.residentFraction(wal, length: dropped) > 0.99
        }
    }

    /// Tells the kernel it may drop the clean cached pages of `path`'s first `length` bytes.
    static func drop(_ path: String, length: Int) -> Bool {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return posix_fadvise(fd, 0, off_t(length), POSIX_FADV_DONTNEED) == 0
    }

    /// The fraction of `path`'s first `length` bytes whose pages the page cache holds (`mincore`).
    static func residentFraction(_ path: String, length: Int) throws -> Double {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw SystemError("open", errno: errno) }
        defer { close(fd) }
        guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { throw SystemError("mmap", errno: errno) }
        defer { munmap(map, length) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (length + pageSize - 1) / pageSize)
        guard mincore(map, length, &vector) == 0 else { throw SystemError("mincore", errno: errno) }
        return Double(vector.filter { $0 & 1 == 1 }.count) / Double(vector.count)
    }
}
