import SeamStore
import XCTest

/// `DatabaseError.resultCode`: real SQLite failures matched by kind and exactly.
final class ResultCodeTests: XCTestCase {
    func testAConstraintFailureMatchesItsKindAndItsExtendedCode() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
        try db.execute("INSERT INTO t VALUES (1, 'a')")
        func failure(_ sql: String) -> DatabaseError? {
            do { try db.execute(sql) } catch { return error }
            return nil
        }
        let unique = try XCTUnwrap(failure("INSERT INTO t VALUES (2, 'a')"))
        let primaryKey = try XCTUnwrap(failure("INSERT INTO t VALUES (1, 'b')"))
        XCTAssertTrue(unique.resultCode.matches(.constraint))
        XCTAssertTrue(unique.resultCode.matches(.constraintUnique))
        XCTAssertFalse(unique.resultCode.matches(.constraintPrimaryKey))
        XCTAssertEqual(primaryKey.resultCode, .constraintPrimaryKey)
        XCTAssertEqual(primaryKey.resultCode.primary, .constraint)
        XCTAssertFalse(primaryKey.resultCode.matches(.busy))
        switch unique.resultCode {
        case .busy, .full: XCTFail("matched the wrong kind")
        case .constraint: break
        default: XCTFail("a primary pattern should match its extended codes")
        }
        XCTAssertTrue(try XCTUnwrap(failure("SELECT * FROM missing")).resultCode.matches(.error))
        XCTAssertFalse(unique.resultCode.isDamage)
        XCTAssertTrue(ResultCode(rawValue: 11 | (1 << 8)).isDamage, "SQLITE_CORRUPT_VTAB is damage")
        XCTAssertTrue(unique.description.contains("constraint"), unique.description)
    }
}
