import SeamSchema
import XCTest

/// Seeded mutations of frames for the quick paths' tests: each of `count` frames is one of
/// `seeds` with one or two bytes replaced, removed or inserted (from an alphabet of JSON's
/// punctuation, digits, a few letters and one non-ASCII character). Returns how many frames
/// `body` counted as recognised.
func mutatedFrames(of seeds: [String], seed: UInt64, count: Int = 20_000, _ body: ([UInt8]) throws -> Bool) rethrows -> Int {
    let alphabet = Array(#"{}[]",:\ 0123456789-.eEtrunlfaSdiymhopsxé"#.utf8)
    var rng = SplitMix64(seed: seed)
    var recognised = 0
    for _ in 0..<count {
        var bytes = Array(seeds[Int(rng.next() % UInt64(seeds.count))].utf8)
        for _ in 0..<(1 + Int(rng.next() % 2)) {
            let at = Int(rng.next() % UInt64(bytes.count))
            switch rng.next() % 3 {
            case 0: bytes[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
            case 1: bytes.remove(at: at)
            default: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
            }
            if bytes.isEmpty { break }
        }
        if try body(bytes) { recognised += 1 }
    }
    return recognised
}

/// Mutates `seeds` and checks each frame `recognises` accepts with `sameAsGeneralPath`; some must
/// stay recognisable and most must not.
func assertMutationsReadTheSame(_ seeds: [String], seed: UInt64, recognises: ([UInt8]) -> Bool,
                                sameAsGeneralPath: ([UInt8]) throws -> Void) throws {
    let total = 20_000
    let recognised = try mutatedFrames(of: seeds, seed: seed, count: total) { bytes in
        guard recognises(bytes) else { return false }
        try sameAsGeneralPath(bytes)
        return true
    }
    XCTAssertGreaterThan(recognised, 100, "the mutations should leave some frames recognisable")
    XCTAssertLessThan(recognised, total - 100)
}
