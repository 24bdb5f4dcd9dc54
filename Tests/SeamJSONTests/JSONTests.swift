import SeamJSON
import XCTest

/// Literals, subscripts and typed accessors.
final class JSONTests: XCTestCase {
    func testLiteralsBuildMessages() {
        let uuid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
        let call: JSON = [
            "method": "org.seam.Store.Fetch",
            "parameters": ["entity": "Session", "parameters": ["t": "\(uuid)"]],
            "more": false,
            "id": 17,
            "ratio": 0.25,
            "none": nil,
        ]
        XCTAssertEqual(call["parameters"]?["parameters"]?["t"], .string(uuid))
        XCTAssertEqual(call["ratio"], .double(0.25))
        XCTAssertEqual(call["none"], .null)
        XCTAssertNil(call["absent"])
    }

    func testAccessors() {
        let value: JSON = ["s": "text", "i": 3, "d": 1.5, "b": true, "a": [10, 20], "o": ["k": 1], "n": nil]
        XCTAssertEqual(value["s"]?.stringValue, "text")
        XCTAssertEqual(value["i"]?.int64Value, 3)
        XCTAssertEqual(value["i"]?.doubleValue, 3)
        XCTAssertEqual(value["d"]?.doubleValue, 1.5)
        XCTAssertNil(value["d"]?.int64Value)
        XCTAssertEqual(value["b"]?.boolValue, true)
        XCTAssertEqual(value["a"]?.arrayValue, [10, 20])
        XCTAssertEqual(value["a"]?[1], 20)
        XCTAssertNil(value["a"]?[2])
        XCTAssertNil(value["a"]?[-1])
        XCTAssertEqual(value["o"]?.objectValue, ["k": 1])
        XCTAssertEqual(value["n"]?.isNull, true)
        XCTAssertEqual(value["s"]?.isNull, false)
        XCTAssertNil(value["s"]?.int64Value)
        XCTAssertNil(value["s"]?["k"])
        XCTAssertNil(value[0])
        XCTAssertNil(JSON.string("x").boolValue)
        XCTAssertNil(JSON.integer(1).stringValue)
        XCTAssertNil(JSON.null.arrayValue)
        XCTAssertNil(JSON.null.objectValue)
    }
}
