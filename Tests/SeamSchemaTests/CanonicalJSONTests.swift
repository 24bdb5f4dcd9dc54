import SeamSchema
import XCTest

final class CanonicalJSONTests: XCTestCase {
    func testKeysSortByUTF8BytesAndNoWhitespace() {
        let doc = CanonicalJSON.object(["b": .integer(1), "a": .array([.bool(true), .null]), "B": .string("x"), "é": .integer(-3)])
        XCTAssertEqual(doc.text, #"{"B":"x","a":[true,null],"b":1,"é":-3}"#)
    }

    func testStringsAreEscapedMinimally() {
        let s = "quote\" back\\ slash/ tab\t nl\n cr\r bs\u{08} ff\u{0c} nul\u{00} us\u{1f} del\u{7f} é 😀"
        XCTAssertEqual(
            CanonicalJSON.string(s).text,
            "\"quote\\\" back\\\\ slash/ tab\\t nl\\n cr\\r bs\\b ff\\f nul\\u0000 us\\u001f del\u{7f} é 😀\"")
    }

    func testExtremeIntegers() {
        XCTAssertEqual(CanonicalJSON.array([.integer(.min), .integer(.max), .integer(0)]).text,
                       "[-9223372036854775808,9223372036854775807,0]")
    }

    func testJSONTextMinifiesAndSortsButKeepsNumbersVerbatim() throws {
        XCTAssertEqual(try JSONText.minify(#" { "b" : [1.50, -0, 2e10], "a" : "\u00e9\/" } "#), #"{"a":"é/","b":[1.50,-0,2e10]}"#)
        XCTAssertEqual(try JSONText.minify("[]"), "[]")
        XCTAssertEqual(try JSONText.minify(#""\ud83d\ude00""#), "\"😀\"")
    }

    func testJSONTextRejectsBrokenInputWithOffset() {
        let cases: [(String, Int)] = [("", 0), ("[1,", 3), ("{\"a\" 1}", 5), ("01", 2), ("[1] x", 4), ("\"\\x\"", 3),
                                      ("tru", 0), ("\"\\ud800\"", 7), ("1.", 2)]
        for (text, offset) in cases {
            XCTAssertThrowsError(try JSONText.minify(text), text) { error in
                XCTAssertEqual((error as? JSONText.Invalid)?.offset, offset, text)
            }
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        XCTAssertThrowsError(try JSONText.minify(deep))
    }

    /// Seeds, then seeded mutations of them: byte flips, cuts, insertions of JSON's own bytes.
    private func mutatedInputs(extraSeeds: [String] = []) -> [String] {
        let seeds = extraSeeds + [#"{"a":[1,2.5e-3,-0,{"b":null}],"c":"x\u00e9\ud83d\ude00\n","d":true,"e":false}"#,
                     #"[{"label":"Work","seconds":1500},{"label":"Rest","seconds":300}]"#,
                     "{\"é\":1,\"e\u{301}\":2}", #"{"k":1,"k":2}"#, #""\udc00""#, #"[1,]"#, " \t\n[ ] ",
                     "{" + (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",\"k7\":0}",
                     String(repeating: "[", count: 64) + String(repeating: "]", count: 64),
                     String(repeating: "[", count: 63) + String(repeating: "]", count: 63)]
        let alphabet = Array(#"{}[]",:\"u0123456789abcdefeE+-.truefalsenul é"#.utf8)
        var rng = SplitMix64(seed: 0x5EA4_0001)
        var inputs = seeds
        for _ in 0..<20_000 {
            var bytes = Array(seeds[Int(rng.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<(1 + Int(rng.next() % 3)) where !bytes.isEmpty {
                let at = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: bytes.removeSubrange(at...)
                default: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                }
            }
            inputs.append(String(decoding: bytes, as: UTF8.self))
        }
        return inputs
    }

    func testValidateAcceptsAndRejectsExactlyWhatParseDoes() {
        let inputs = mutatedInputs()
        var accepted = 0
        for text in inputs {
            let parsed = Result { () throws(JSONText.Invalid) in try JSONText.parse(text) }
            let validated = Result { () throws(JSONText.Invalid) in try JSONText.validate(text) }
            switch (parsed, validated) {
            case (.success, .success): accepted += 1
            case (.failure(let p), .failure(let v)):
                XCTAssertEqual(p.offset, v.offset, text)
                XCTAssertEqual(p.reason, v.reason, text)
            default: XCTFail("parse and validate disagree on \(text.debugDescription)")
            }
        }
        // Both outcomes are exercised. Keys are told apart by their bytes (schema.md): an NFC and
        // an NFD spelling are two keys, in byte order; the same bytes twice are a duplicate.
        XCTAssertGreaterThan(accepted, 100)
        XCTAssertLessThan(accepted, inputs.count - 100)
        XCTAssertNoThrow(try JSONText.validate("{\"\u{e9}\":1,\"e\u{301}\":2}"))
        XCTAssertEqual(try JSONText.minify("{\"\u{e9}\":1,\"e\u{301}\":2}"), "{\"e\u{301}\":2,\"\u{e9}\":1}")
        XCTAssertThrowsError(try JSONText.validate("{\"\u{e9}\":1,\"\u{e9}\":2}"))
    }

    /// `isCanonical` says yes only for text that is its own canonical spelling (so copying it is
    /// writing it), and, for ASCII text without escapes, for every such text.
    func testIsCanonicalExactlyWhenTheTextIsItsOwnSpelling() {
        let inputs = mutatedInputs(extraSeeds: [#"{"a":1,"b":[true,false,null,-0.5e+3],"c":{"d":"x","e":{}}}"#,
                                                #"[{"label":"work","seconds":1500}]"#, #"{"B":1,"a":2}"#, "[[],{},\"\",0]"])
        var canonical = 0, other = 0
        for text in inputs {
            let minified = try? JSONText.minify(text)
            if JSONText.isCanonical(text) {
                XCTAssertEqual(minified, text, "isCanonical said yes to \(text.debugDescription)")
                canonical += 1
            } else {
                other += 1
                if text.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "\\") }) {
                    XCTAssertNotEqual(minified, text, "isCanonical said no to \(text.debugDescription)")
                }
            }
        }
        XCTAssertGreaterThan(canonical, 500)
        XCTAssertGreaterThan(other, 1000)
        XCTAssertFalse(JSONText.isCanonical(#"{"a":1,"a":2}"#))
        XCTAssertFalse(JSONText.isCanonical(#"{"é":1}"#), "keys outside ASCII are left to the parser")
        XCTAssertFalse(JSONText.isCanonical(String(repeating: "[", count: 65) + String(repeating: "]", count: 65)), "too deep to parse")
        XCTAssertTrue(JSONText.isCanonical(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)))
    }

    func testBase64() {
        XCTAssertEqual(Base64.encode([]), "")
        XCTAssertEqual(Base64.encode(Array("f".utf8)), "Zg==")
        XCTAssertEqual(Base64.encode(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(Base64.encode(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertEqual(Base64.encode([0xff, 0xfe, 0x00]), "//4A")
        for text in ["", "Zg==", "Zm8=", "Zm9vYmFy", "//4A"] { XCTAssertEqual(Base64.decode(text).map { Base64.encode($0) }, text) }
        for bad in ["Z", "Zg=", "Zg===", "Z===", "====", "Zg==Zg==", "Z=g=", "Zm9v YmFy", "Zm9v\nYmFy", "Zm-v", "Zm9vYmF", "é", "Zm8=="] {
            XCTAssertNil(Base64.decode(bad), bad)
        }
    }

    /// Decoding agrees with a plain reading of RFC 4648 on seeded random texts: valid ones of
    /// every length, and the same with a byte changed, dropped or added.
    func testBase64DecodeAgreesWithAPlainReading() {
        func reference(_ text: String) -> [UInt8]? {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
            var bytes = Array(text.utf8), padding = 0
            while bytes.last == UInt8(ascii: "=") { bytes.removeLast(); padding += 1 }
            guard padding <= 2, (bytes.count + padding) % 4 == 0 else { return nil }
            var bits: [UInt8] = []
            for b in bytes {
                guard let v = alphabet.firstIndex(of: b) else { return nil }
                for k in (0..<6).reversed() { bits.append(UInt8(v >> k & 1)) }
            }
            return stride(from: 0, to: bits.count - bits.count % 8, by: 8).map { i in bits[i..<i + 8].reduce(0) { $0 << 1 | $1 } }
        }
        var random = SplitMix64(seed: 64)
        let pool = Array("ABCXYZabcxyz0189+/=-_ \n\u{0}é".unicodeScalars)
        for round in 0..<3_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            var text = Array(Base64.encode(bytes).unicodeScalars)
            XCTAssertEqual(Base64.decode(String(String.UnicodeScalarView(text))), bytes)
            switch round % 4 {
            case 0 where !text.isEmpty: text[Int.random(in: 0..<text.count, using: &random)] = pool.randomElement(using: &random)!
            case 1 where !text.isEmpty: text.remove(at: Int.random(in: 0..<text.count, using: &random))
            case 2: text.insert(pool.randomElement(using: &random)!, at: Int.random(in: 0...text.count, using: &random))
            default: break
            }
            let mutated = String(String.UnicodeScalarView(text))
            XCTAssertEqual(Base64.decode(mutated), reference(mutated), mutated)
        }
    }

    func testF64IsTheBitPattern() {
        XCTAssertEqual(SchemaEncoding.f64(1.5), "f64:3ff8000000000000")
        XCTAssertEqual(SchemaEncoding.f64(-0.0), "f64:0000000000000000")
        XCTAssertEqual(SchemaEncoding.f64(0), "f64:0000000000000000")
    }
}

