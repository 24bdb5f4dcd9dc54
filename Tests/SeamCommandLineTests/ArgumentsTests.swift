import SeamCommandLine
import XCTest

final class ArgumentsTests: XCTestCase {
    /// `seam flash -5m`: a dash then a digit is a (negative) operand, for the command to judge,
    /// not an unknown option.
    func testADashThenADigitIsAnOperand() throws {
        let a = try Arguments(["-5m", "-1", "--json"], flags: ["json"])
        XCTAssertEqual(a.positional, ["-5m", "-1"])
        XCTAssertTrue(a.flag("json"))
        XCTAssertThrowsError(try Arguments(["-x5"])) { XCTAssertTrue("\($0)".contains("unknown option -x5"), "\($0)") }
    }

    func testOptionsFlagsAndTheEndOfOptions() throws {
        let a = try Arguments(["--step", "a=1m", "--step=b=2m", "x", "--", "--json", "-"], options: ["step"], flags: ["json"])
        XCTAssertEqual(a.values("step"), ["a=1m", "b=2m"])
        XCTAssertEqual(a.positional, ["x", "--json", "-"])
        XCTAssertFalse(a.flag("json"))
        XCTAssertThrowsError(try Arguments(["--step"], options: ["step"])) { XCTAssertEqual("\($0)", "--step needs a value") }
    }
}
