import SeamSchema
import SeamSystem
import XCTest

/// The context's source of uuids: the kernel's randomness, drawn 512 bytes at a time.
final class RandomBufferTests: XCTestCase {
    func testUUIDsFromTheBufferAreVersion4AndDistinctAcrossRefills() {
        var random = RandomBuffer()
        var seen = Set<String>()
        for _ in 0..<2_000 {  // 4,000 words: some 60 refills
            let uuid = UUIDText.random(using: &random)
            XCTAssertTrue(UUIDText.isCanonical(uuid), uuid)
            XCTAssertEqual(Array(uuid.utf8)[14], UInt8(ascii: "4"), "version 4: \(uuid)")
            seen.insert(uuid)
        }
        XCTAssertEqual(seen.count, 2_000)
    }

    func testEveryBitVaries() {
        var random = RandomBuffer()
        var ones: UInt64 = 0, zeros: UInt64 = 0
        for _ in 0..<256 {
            let w = random.next()
            ones |= w
            zeros |= ~w
        }
        XCTAssertEqual(ones, .max, "each bit was 1 at least once")
        XCTAssertEqual(zeros, .max, "each bit was 0 at least once")
    }
}
