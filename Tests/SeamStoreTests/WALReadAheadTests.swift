import Foundation
@testable import SeamStore
import SeamSystem
import SeamTestSupport
import XCTest

/// The checkpointer's read-ahead: pages of the WAL that the kernel dropped from its cache are
/// read back before the writer overwrites them (a frame ends part way into a page, and a
/// dropped page would be read on the writer's thread, in the commit).
final class WALReadAheadTests: XCTestCase {
    /// A 6 MiB file standing for a WAL that started over (what the last WAL wrote lies ahead),
    /// on the disk (clean pages, which the kernel may drop), and the read-ahead's thread on it.
    private func wal(_ directory: TemporaryDirectory) throws -> (String, WALReadAhead) {
        let path = directory.file("store.sqlite-wal")
        FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 6 << 20))
        try FileFlusher(path: path).sync()
        return (path, try WALReadAhead(path: path, pageSize: 4096))
    }

    /// The start of the WAL, dropped from the page cache, is read back when a checkpoint has
    /// copied every frame back (`Checkpointer` says so): the next commit writes there.
    func testTheStartOfTheWALIsReadBackBeforeItStartsOver() throws {
        let directory = TemporaryDirectory("wal-read-ahead")
        let (path, readAhead) = try wal(directory)
        defer { readAhead.stop() }
        let start = WALReadAhead.startWindow
        XCTAssertTrue(Self.drop(path, offset: 0, length: start))
        XCTAssertLessThan(try Self.residentFraction(path, offset: 0, length: start), 0.5, "the kernel kept the pages it was told it may drop")
        readAhead.startsOver()
        try eventually(10, "the start of the WAL, where it starts over, is back in the page cache") {
            try Self.residentFraction(path, offset: 0, length: start) > 0.99
        }
    }

    /// Pages ahead of the WAL's end dropped from the page cache are read back after a commit,
    /// before the writer reaches them.
    func testPagesAheadOfTheEndAreReadBackAsTheEndMovesOn() throws {
        let directory = TemporaryDirectory("wal-read-ahead")
        let (path, readAhead) = try wal(directory)
        defer { readAhead.stop() }
        // The kernel drops whole folios (2 MiB here) only: the pages from 2 MiB to 4 MiB, and
        // the WAL's end just before them.
        let ahead = 2 << 20
        XCTAssertTrue(Self.drop(path, offset: ahead, length: 2 << 20))
        XCTAssertLessThan(try Self.residentFraction(path, offset: ahead, length: WALReadAhead.window), 0.5)
        readAhead.committed(frames: (ahead - 32) / (4096 + 24) - 1)
        try eventually(10, "what lies ahead of the end is back in the page cache") {
            try Self.residentFraction(path, offset: ahead, length: WALReadAhead.window - (16 << 10)) > 0.99
        }
    }

    /// Tells the kernel it may drop the clean cached pages of `length` bytes of `path` from `offset`.
    static func drop(_ path: String, offset: Int, length: Int) -> Bool {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_DONTNEED) == 0
    }

    /// The fraction of `length` bytes of `path` from `offset` (a multiple of the page size) whose
    /// pages the page cache holds (`mincore`).
    static func residentFraction(_ path: String, offset: Int, length: Int) throws -> Double {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw SystemError("open", errno: errno) }
        defer { close(fd) }
        guard let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, off_t(offset)), map != MAP_FAILED else {
            throw SystemError("mmap", errno: errno)
        }
        defer { munmap(map, length) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (length + pageSize - 1) / pageSize)
        guard mincore(map, length, &vector) == 0 else { throw SystemError("mincore", errno: errno) }
        return Double(vector.filter { $0 & 1 == 1 }.count) / Double(vector.count)
    }
}
