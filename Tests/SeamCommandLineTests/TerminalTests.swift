import SeamCommandLine
import XCTest

/// `Terminal.printable`: what a name from the store may not do to a terminal.
final class TerminalTests: XCTestCase {
    func testControlCharactersAreShownNotObeyed() {
        XCTAssertEqual(Terminal.printable("a\u{1B}]0;owned\u{07}b"), "a\\u{1B}]0;owned\\u{7}b")
        XCTAssertEqual(Terminal.printable("line\nforged"), "line\\u{A}forged")
        XCTAssertEqual(Terminal.printable("del\u{7F}c1\u{9B}"), "del\\u{7F}c1\\u{9B}")
    }

    func testBidirectionalOverridesAndOtherInvisibleFormatCharactersAreShown() {
        // A right-to-left override would print "Tea" + the rest of the line reversed.
        XCTAssertEqual(Terminal.printable("Tea\u{202E}3m"), "Tea\\u{202E}3m")
        for scalar: UInt32 in [0x202A, 0x202B, 0x202C, 0x202D, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C,
                               0x200B, 0x2060, 0xFEFF, 0x00AD, 0xE0001] {
            let c = String(Character(Unicode.Scalar(scalar)!))
            XCTAssertEqual(Terminal.printable("x\(c)y"), "x\\u{\(String(scalar, radix: 16, uppercase: true))}y", "U+\(String(scalar, radix: 16))")
        }
    }

    func testWhatPeopleWriteIsKeptAsItIs() {
        for text in ["Tea", "Café crème", "お茶", "שלום", "مرحبا", "e\u{301}", "👨\u{200D}👩\u{200D}👧", "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
                     "❤\u{FE0F}", ""] {
            XCTAssertEqual(Terminal.printable(text), text, text)
        }
    }
}
