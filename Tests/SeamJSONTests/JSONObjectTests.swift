import SeamJSON
import XCTest

/// Ordered members, lookup below and above the index threshold, mutation and equality.
final class JSONObjectTests: XCTestCase {
    func testLookupKeepsOrder() {
        let object: JSONObject = ["b": 1, "a": 2, "c": 3]
        XCTAssertEqual(Array(object.keys), ["b", "a", "c"])
        XCTAssertEqual(Array(object.values), [1, 2, 3])
        XCTAssertEqual(object["a"], 2)
        XCTAssertNil(object["d"])
        XCTAssertEqual(object.index(forKey: "c"), 2)
        XCTAssertEqual(object[1].key, "a")
        XCTAssertEqual(object.count, 3)
    }

    func testMutation() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = 10  // in place
        object["c"] = 3  // appended
        XCTAssertEqual(Array(object.keys), ["a", "b", "c"])
        XCTAssertEqual(object["a"], 10)
        XCTAssertEqual(object.updateValue(20, forKey: "b"), 2)
        XCTAssertNil(object.updateValue(4, forKey: "d"))
        object["a"] = nil
        XCTAssertEqual(object.removeValue(forKey: "c"), 3)
        XCTAssertNil(object.removeValue(forKey: "zz"))
        XCTAssertEqual(Array(object.keys), ["b", "d"])
        XCTAssertEqual(object, ["b": 20, "d": 4])
    }

    /// Past the threshold lookups go through the hash index; removals and updates keep it right.
    func testLargeObjects() throws {
        var object = JSONObject()
        for i in 0..<100 { object["k\(i)"] = .integer(Int64(i)) }
        for i in 0..<100 { XCTAssertEqual(object["k\(i)"], .integer(Int64(i))) }
        for i in stride(from: 0, to: 100, by: 2) { object["k\(i)"] = nil }
        XCTAssertEqual(object.count, 50)
        for i in 0..<100 { XCTAssertEqual(object["k\(i)"], i % 2 == 0 ? nil : .integer(Int64(i)), "k\(i)") }
        XCTAssertEqual(object.index(forKey: "k99"), 49)
        for i in stride(from: 1, to: 100, by: 2) where i > 5 { object["k\(i)"] = nil }  // below the threshold again
        XCTAssertEqual(Array(object.keys), ["k1", "k3", "k5"])
        XCTAssertEqual(object["k3"], 3)

        let decoded = try XCTUnwrap(
            JSON.decode("{" + (0..<50).map { "\"m\($0)\":\($0)" }.joined(separator: ",") + "}").objectValue)
        XCTAssertEqual(decoded["m49"], 49)
        XCTAssertEqual(decoded["m0"], 0)
        XCTAssertNil(decoded["m50"])
    }

    func testKeysCompareByBytes() throws {
        let precomposed = "\u{E9}"
        let decomposed = "e\u{301}"
        XCTAssertEqual(precomposed, decomposed)  // Swift's String equality …
        var object: JSONObject = [precomposed: 1]
        XCTAssertNil(object[decomposed])  // … is not the key equality of JSON
        object[decomposed] = 2
        XCTAssertEqual(object.count, 2)
        XCTAssertEqual(object[precomposed], 1)
        XCTAssertNotEqual(JSON.string(precomposed), JSON.string(decomposed))
        var large = JSONObject()
        for i in 0..<40 { large["k\(i)"] = 0 }
        large[precomposed] = 1
        large[decomposed] = 2
        XCTAssertEqual(large[precomposed], 1)
        XCTAssertEqual(large[decomposed], 2)
    }

    func testEqualityIgnoresOrder() {
        let a: JSON = ["x": 1, "y": [1, 2], "z": ["p": nil, "q": true]]
        let b: JSON = ["z": ["q": true, "p": nil], "y": [1, 2], "x": 1]
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertEqual(Set([a, b]).count, 1)
        XCTAssertNotEqual(a, ["x": 1, "y": [2, 1], "z": ["p": nil, "q": true]])  // arrays keep order
        XCTAssertNotEqual(a, ["x": 1, "y": [1, 2]])
        XCTAssertNotEqual(JSON.integer(1), JSON.double(1))
        XCTAssertNotEqual(a.encoded(), b.encoded())  // encoding follows stored order
    }

    /// A partition keeps each side's order, and each side looks its keys up (indexed or
    /// scanned) and takes new ones as any object does.
    func testPartitionKeepsOrderAndLookups() {
        for size in [0, 5, 40, 90] {
            var object = JSONObject()
            for i in 0..<size { object["k\(i)"] = .integer(Int64(i)) }
            var (even, odd) = object.partitioned { Int($0.dropFirst())! % 2 == 0 }
            XCTAssertEqual(Array(even.keys), (0..<size).filter { $0 % 2 == 0 }.map { "k\($0)" })
            XCTAssertEqual(Array(odd.keys), (0..<size).filter { $0 % 2 == 1 }.map { "k\($0)" })
            for i in 0..<size {
                XCTAssertEqual((i % 2 == 0 ? even : odd)["k\(i)"], .integer(Int64(i)))
                XCTAssertNil((i % 2 == 0 ? odd : even)["k\(i)"])
            }
            even["k1"] = "new"
            odd["k1"] = "replaced"
            XCTAssertEqual(even.count, (size + 1) / 2 + 1)
            XCTAssertEqual(odd.count, max(size / 2, 1))
            XCTAssertEqual(even["k1"], "new")
        }
    }
}
