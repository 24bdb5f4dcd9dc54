import SeamSchema
import SeamStore
import XCTest

/// Defaults written into SQL read back bit for bit: SQLite 3.40 reads some decimal texts of
/// doubles one bit off, and a migration fills rows with what the DDL says.
final class DefaultLiteralTests: StoreTestCase {
    func testEveryDoubleReadsBackExactly() throws {
        let db = try Database(path: ":memory:")
        var random = SplitMix64(seed: 20_261_201)
        var values: [Double] = [0.1, -0.1, 35649.39102396413, 1e-300, Double.leastNonzeroMagnitude, -2.2250738585072014e-308, 1.7976931348623157e308,
                                123456789012345.5, 1e15 + 0.5, 0.5, -3.75]
        while values.count < 20_000 {
            let d = Double(bitPattern: random.next())
            if d.isFinite { values.append(d) }
        }
        var wrong: [Double] = []
        for d in values {
            let read = try db.scalar("SELECT \(SchemaSQL.literal(.double(d)))")
            guard case .double(let back) = read, back.bitPattern == d.bitPattern else {
                if case .integer(let i) = read, Double(i) == d { continue }  // a whole number comes back as one
                wrong.append(d)
                continue
            }
        }
        XCTAssertEqual(wrong.count, 0, "read back otherwise: \(wrong.prefix(5))")
        // And as a column's default, where CREATE TABLE takes the expression.
        try db.execute("CREATE TABLE t (id INTEGER, x REAL NOT NULL DEFAULT \(SchemaSQL.literal(.double(35649.39102396413))))")
        try db.execute("INSERT INTO t (id) VALUES (1)")
        guard case .double(let x) = try db.scalar("SELECT x FROM t") else { return XCTFail("not a double") }
        XCTAssertEqual(x.bitPattern, 35649.39102396413.bitPattern)
    }
}
