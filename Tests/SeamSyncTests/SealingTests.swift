import Foundation
import SeamJSON
import SeamSchema
@testable import SeamSync
import SeamSyncSetup
import XCTest

/// The sealing of encrypted fields and the zone's key, without a server: what a sealed field
/// is, that it opens only where it was sealed and with its key, and that a recovery phrase
/// carries the key and catches a typo. Generated faults: every byte of a box flipped, every
/// length cut, every word of a phrase changed.
final class SealingTests: XCTestCase {
    let key = ZoneKey(bytes: Array(0..<32))!

    func testASealedFieldOpensWhereItWasSealedAndNowhereElse() throws {
        let seal = FieldSeal(key: key, zone: "alice")
        let value: JSON = .string("Tea — Earl Grey 😀")
        let sealed = seal.seal(value, entity: "Timer", uuid: "0190e0b2-0000-7000-8000-000000000001", attribute: "name")
        XCTAssertTrue(FieldSeal.isSealed(sealed))
        XCTAssertEqual(sealed["key"]?.stringValue, key.id)
        XCTAssertFalse(String(decoding: sealed.encoded(), as: UTF8.self).contains("Earl"), "no clear text in the box")
        XCTAssertEqual(try seal.open(sealed, entity: "Timer", uuid: "0190e0b2-0000-7000-8000-000000000001", attribute: "name").get(), value)
        // Moved: another row, another field, another entity, another zone.
        XCTAssertEqual(seal.open(sealed, entity: "Timer", uuid: "0190e0b2-0000-7000-8000-000000000002", attribute: "name"), .failure(.forged))
        XCTAssertEqual(seal.open(sealed, entity: "Timer", uuid: "0190e0b2-0000-7000-8000-000000000001", attribute: "steps"), .failure(.forged))
        XCTAssertEqual(seal.open(sealed, entity: "UserGroup", uuid: "0190e0b2-0000-7000-8000-000000000001", attribute: "name"), .failure(.forged))
        XCTAssertEqual(FieldSeal(key: key, zone: "bob").open(sealed, entity: "Timer", uuid: "0190e0b2-0000-7000-8000-000000000001",
                                                            attribute: "name"), .failure(.forged))
        // Another key: named, not taken for tampering.
        let other = FieldSeal(key: ZoneKey(bytes: Array(repeating: 7, count: 32))!, zone: "alice")
        XCTAssertEqual(other.open(sealed, entity: "Timer", uuid: "0190e0b2-0000-7000-8000-000000000001", attribute: "name"),
                       .failure(.otherKey(key.id)))
        // Two seals of one value differ (a fresh nonce each time).
        XCTAssertNotEqual(seal.seal(value, entity: "Timer", uuid: "u", attribute: "name"), seal.seal(value, entity: "Timer", uuid: "u", attribute: "name"))
    }

    /// The associated data is, byte for byte, the canonical JSON array Protocol/sync.md names,
    /// whatever the zone, entity, uuid and attribute hold (quotes, backslashes, controls, any script).
    func testTheAssociatedDataIsTheCanonicalArray() {
        let names = ["alice", "", "q\"uote", "back\\slash", "tab\there", "é 😀", "\u{1}"]
        for (i, zone) in names.enumerated() {
            let seal = FieldSeal(key: key, zone: zone)
            let entity = names[(i + 1) % names.count], uuid = names[(i + 2) % names.count], attribute = names[(i + 3) % names.count]
            var expected: [UInt8] = []
            CanonicalJSON.array([.string("seam-sealed-1"), .string(zone), .string(entity), .string(uuid), .string(attribute)]).write(into: &expected)
            XCTAssertEqual(seal.associatedData(entity: entity, uuid: uuid, attribute: attribute), expected, "zone \(zone.debugDescription)")
        }
    }

    /// Every single-bit flip of the box, every cut of it, and each member changed or missing:
    /// none opens, none crashes.
    func testATamperedOrTruncatedBoxNeverOpens() throws {
        let seal = FieldSeal(key: key, zone: "z")
        let sealed = seal.seal(.array([.object(["label": "Steep", "seconds": 180])]), entity: "Timer", uuid: "u", attribute: "steps")
        let box = try XCTUnwrap(Data(base64Encoded: sealed["box"]?.stringValue ?? "").map { Array($0) })
        func open(_ bytes: [UInt8]) -> Result<JSON, FieldSeal.OpenError> {
            seal.open(.object(["sealed": 1, "key": .string(key.id), "box": .string(Data(bytes).base64EncodedString())]), entity: "Timer", uuid: "u",
                      attribute: "steps")
        }
        XCTAssertNoThrow(try open(box).get())
        for i in 0..<box.count {
            var flipped = box
            flipped[i] ^= UInt8(1 << (i % 8))
            XCTAssertEqual(open(flipped), .failure(.forged), "bit \(i % 8) of byte \(i)")
        }
        for n in 0..<box.count {
            let result = open(Array(box.prefix(n)))
            XCTAssertTrue(result == .failure(.forged) || result == .failure(.malformed), "cut to \(n) bytes: \(result)")
        }
        for broken: JSON in [.object(["sealed": 2, "key": .string(key.id), "box": sealed["box"]!]),
                             .object(["sealed": 1, "key": .string(key.id), "box": "not base64!"]),
                             .object(["sealed": 1, "key": .string(key.id), "box": .integer(3)]),
                             .object(["sealed": 1, "key": .string(key.id)]), .string("clear")] {
            XCTAssertEqual(seal.open(broken, entity: "Timer", uuid: "u", attribute: "steps"), .failure(.malformed), "\(broken)")
        }
    }

    /// A record: the encrypted fields sealed, the others as they were; opened whole again; a
    /// record with a forged field says which.
    func testARecordIsSealedFieldByField() throws {
        let seal = FieldSeal(key: key, zone: "z")
        let fields: JSONObject = ["name": "Tea", "steps": .array([]), "repeatCount": 2, "icon": "cup"]
        let sealed = seal.seal(fields, encrypted: ["name", "steps", "absent"], entity: "Timer", uuid: "u")
        XCTAssertTrue(FieldSeal.isSealed(sealed["name"]!) && FieldSeal.isSealed(sealed["steps"]!))
        XCTAssertEqual(sealed["repeatCount"], 2)
        XCTAssertEqual(sealed["icon"], "cup")
        XCTAssertNil(sealed["absent"])
        XCTAssertEqual(try seal.open(sealed, entity: "Timer", uuid: "u").get(), fields)
        var forged = sealed
        forged["name"] = sealed["steps"]
        guard case .failure(let why) = seal.open(forged, entity: "Timer", uuid: "u") else { return XCTFail("a moved box opened") }
        XCTAssertEqual(why.field, "name")
        XCTAssertTrue(why.description.contains("moved from another row or field"), why.description)
    }

    /// The phrase holds the key; each word changed to any other word is caught (by the word
    /// list or by the checksum) but for the few the 8-bit checksum cannot tell, counted here.
    func testTheRecoveryPhraseCarriesTheKeyAndCatchesATypo() throws {
        for seed in 0..<20 {
            var g = SplitMix64(seed: UInt64(seed))
            let k = ZoneKey(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: g.next()) })!
            let words = k.phrase.split(separator: " ")
            XCTAssertEqual(words.count, 24)
            XCTAssertEqual(try ZoneKey(phrase: k.phrase), k)
            XCTAssertEqual(try ZoneKey(phrase: words.joined(separator: "-").uppercased()), k, "hyphens, capitals")
            // A letter swapped in one word, at every position.
            var missed = 0, tried = 0
            for (i, w) in words.enumerated() {
                for replacement in ["b", "z", "ou", "e"] {
                    var typo = Array(words.map(String.init))
                    typo[i] = replacement + w.dropFirst()
                    guard typo[i] != w else { continue }
                    tried += 1
                    if (try? ZoneKey(phrase: typo.joined(separator: " "))) == k { XCTFail("a changed word gave the same key") }
                    if (try? ZoneKey(phrase: typo.joined(separator: " "))) != nil { missed += 1 }
                }
            }
            XCTAssertLessThan(Double(missed), Double(tried) * 0.02, "the checksum lets through about 1 in 256: \(missed) of \(tried)")
        }
        XCTAssertThrowsError(try ZoneKey(phrase: "bab bab")) { XCTAssertTrue("\($0)".contains("24 words"), "\($0)") }
        XCTAssertThrowsError(try ZoneKey(phrase: ([String](repeating: "bab", count: 23) + ["qqq"]).joined(separator: " "))) {
            XCTAssertTrue("\($0)".contains("word 24, 'qqq', is not a word"), "\($0)")
        }
    }

    /// The key file: written 0600, read back; refused when others may read it, when it is not
    /// a key file, when it is missing.
    func testTheKeyFileIsKeptPrivate() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("seam-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = ZoneKey.path(in: dir)
        XCTAssertThrowsError(try ZoneKey.read(path)) { XCTAssertTrue("\($0)".contains("is missing"), "\($0)") }
        try key.write(to: path)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, 0o600)
        XCTAssertEqual(try ZoneKey.read(path), key)
        chmod(path, 0o644)
        XCTAssertThrowsError(try ZoneKey.read(path)) { XCTAssertTrue("\($0)".contains("chmod 600"), "\($0)") }
        try "seam-zone-key 1 0011\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        XCTAssertThrowsError(try ZoneKey.read(path)) { XCTAssertTrue("\($0)".contains("not a Seam key file"), "\($0)") }
    }
}
