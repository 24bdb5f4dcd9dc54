@testable import SeamJSON
import XCTest

/// The hash index of large objects compares keys by their bytes, so it must hash their bytes.
final class IndexKeyTests: XCTestCase {
    /// 1,024 spellings of one text (each of ten letters é as one scalar, or e and U+0301): all
    /// canonically equal, so `String` hashes them alike, and an object of such keys made its
    /// index quadratic (85,000 keys in a 4 MiB frame took 23 s to parse).
    func testCanonicallyEqualKeysHashApart() throws {
        let spellings = (0..<1024).map { bits in
            String((0..<10).map { i in bits >> i & 1 == 0 ? "\u{E9}" : "e\u{301}" }.joined())
        }
        XCTAssertEqual(Set(spellings).count, 1, "Swift's == equates them")
        XCTAssertEqual(Set(spellings.map { JSONObject.IndexKey($0).hashValue }).count, 1024)
        // And an object of them keeps them apart.
        let text = "{" + spellings.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
        let object = try XCTUnwrap(JSON.decode(Array(text.utf8)).objectValue)
        XCTAssertEqual(object.count, 1024)
        for (i, key) in spellings.enumerated() { XCTAssertEqual(object[key]?.int64Value, Int64(i)) }
    }
}
