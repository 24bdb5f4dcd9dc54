import SeamSchema
import XCTest

/// SHA-256 against the example vectors of NIST (FIPS 180-4 examples and the CAVP short messages).
final class SHA256Tests: XCTestCase {
    private func hex(_ s: String) -> String { Hex.encode(SHA256.hash(Array(s.utf8))) }

    func testNISTExampleVectors() {
        XCTAssertEqual(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(
            hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    func testOneMillionAs() {
        var h = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { h.update(chunk) }
        XCTAssertEqual(Hex.encode(h.finalize()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// CAVP SHA256ShortMsg (one and two bytes), and messages of 55 and 56 bytes that straddle the
    /// padding boundary (cross-checked with Python's hashlib).
    func testCAVPShortMessages() {
        XCTAssertEqual(Hex.encode(SHA256.hash([0xd3])), "28969cdfa74a12c82f3bad960b0b000aca2ac329deea5c2328ebc6f2ba9802c1")
        XCTAssertEqual(Hex.encode(SHA256.hash([0x11, 0xaf])), "5ca7133fa735326081558ac312c620eeca9970d1e70a4b95533d956f072d1f98")
        let fiftyFive = [UInt8](repeating: 0x61, count: 55)
        let fiftySix = [UInt8](repeating: 0x61, count: 56)
        XCTAssertEqual(Hex.encode(SHA256.hash(fiftyFive)), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        XCTAssertEqual(Hex.encode(SHA256.hash(fiftySix)), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
    }

    func testIncrementalUpdatesAgreeWithOneShot() {
        var g = SystemRandomNumberGenerator()
        for length in [0, 1, 63, 64, 65, 127, 128, 129, 1000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &g) }
            var h = SHA256()
            var i = 0
            while i < bytes.count {
                let n = min(bytes.count - i, Int.random(in: 1...70, using: &g))
                h.update(bytes[i..<i + n])
                i += n
            }
            XCTAssertEqual(h.finalize(), SHA256.hash(bytes), "length \(length)")
        }
    }
}
