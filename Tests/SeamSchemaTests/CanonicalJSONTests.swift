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

    func testBase64() {
        XCTAssertEqual(Base64.encode([]), "")
        XCTAssertEqual(Base64.encode(Array("f".utf8)), "Zg==")
        XCTAssertEqual(Base64.encode(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(Base64.encode(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertEqual(Base64.encode([0xff, 0xfe, 0x00]), "//4A")
    }

    func testF64IsTheBitPattern() {
        XCTAssertEqual(SchemaEncoding.f64(1.5), "f64:3ff8000000000000")
        XCTAssertEqual(SchemaEncoding.f64(-0.0), "f64:0000000000000000")
        XCTAssertEqual(SchemaEncoding.f64(0), "f64:0000000000000000")
    }
}
