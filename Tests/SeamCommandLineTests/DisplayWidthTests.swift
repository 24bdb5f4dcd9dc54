import SeamCommandLine
import XCTest

/// Terminal columns: what lines up a table and keeps a line of `seam watch` from wrapping.
final class DisplayWidthTests: XCTestCase {
    func testColumnsOfNarrowWideAndZeroWidthText() {
        XCTAssertEqual(DisplayWidth.columns(""), 0)
        XCTAssertEqual(DisplayWidth.columns("Tea"), 3)
        XCTAssertEqual(DisplayWidth.columns("茶"), 2, "a CJK ideograph")
        XCTAssertEqual(DisplayWidth.columns("お茶の時間"), 10, "kana and kanji")
        XCTAssertEqual(DisplayWidth.columns("한국"), 4, "Hangul syllables")
        XCTAssertEqual(DisplayWidth.columns("\u{1100}\u{1161}\u{11A8}"), 2, "a syllable of conjoining Jamo")
        XCTAssertEqual(DisplayWidth.columns("Ａ"), 2, "fullwidth A")
        XCTAssertEqual(DisplayWidth.columns("ｱ"), 1, "halfwidth katakana")
        XCTAssertEqual(DisplayWidth.columns("e\u{301}"), 1, "a letter and its combining accent")
        XCTAssertEqual(DisplayWidth.columns("\u{301}"), 0, "a combining mark alone")
        XCTAssertEqual(DisplayWidth.columns("a\u{200B}b"), 2, "a zero-width space")
        XCTAssertEqual(DisplayWidth.columns("👍"), 2)
        XCTAssertEqual(DisplayWidth.columns("👍🏽"), 2, "with a skin tone")
        XCTAssertEqual(DisplayWidth.columns("👨‍👩‍👧"), 2, "a family joined by ZWJ is one picture")
        XCTAssertEqual(DisplayWidth.columns("🇩🇪"), 2, "a flag")
        XCTAssertEqual(DisplayWidth.columns("☺"), 1, "text style")
        XCTAssertEqual(DisplayWidth.columns("☺\u{FE0F}"), 2, "asked for emoji style")
        XCTAssertEqual(DisplayWidth.columns("1"), 1, "a digit is an emoji only with VS16")
        XCTAssertEqual(DisplayWidth.columns("▶ running ✓ finished ‖ paused … “note”"), 38, "what seam watch draws is narrow")
    }

    func testCutKeepsWithinTheWidthAndNeverSplitsACharacter() {
        XCTAssertEqual(DisplayWidth.cut("Tea", to: 3), "Tea")
        XCTAssertEqual(DisplayWidth.cut("Teapot", to: 4), "Tea…")
        XCTAssertEqual(DisplayWidth.cut("茶茶茶茶", to: 5), "茶茶…")
        XCTAssertEqual(DisplayWidth.cut("茶茶茶茶", to: 6), "茶茶…", "half a wide character does not fit")
        XCTAssertEqual(DisplayWidth.cut("cafe\u{301}s", to: 5), "cafe\u{301}s")
        XCTAssertEqual(DisplayWidth.cut("cafe\u{301}s!", to: 5), "cafe\u{301}…")
        XCTAssertEqual(DisplayWidth.cut("👨‍👩‍👧👨‍👩‍👧", to: 3), "👨‍👩‍👧…")
        XCTAssertEqual(DisplayWidth.cut("茶", to: 1), "…")
        XCTAssertEqual(DisplayWidth.cut("Tea", to: 0), "")
        for width in 0...12 {
            XCTAssertLessThanOrEqual(DisplayWidth.columns(DisplayWidth.cut("お茶 and 🍰 at 3", to: width)), width)
        }
    }

    func testPaddingCountsColumns() {
        XCTAssertEqual(DisplayWidth.padded("茶", to: 4), "茶  ")
        XCTAssertEqual(DisplayWidth.padded("Tea", to: 4), "Tea ")
        XCTAssertEqual(DisplayWidth.padded("お茶の時間", to: 4), "お茶の時間")
    }
}
