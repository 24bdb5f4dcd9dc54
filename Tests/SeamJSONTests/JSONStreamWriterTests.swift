import SeamJSON
import XCTest

/// The stream writer must write exactly what `JSON.encoded()` writes for the same value.
final class JSONStreamWriterTests: XCTestCase {
    /// Streams a value token by token (the way the broker writes rows).
    private func stream(_ value: JSON, into w: inout JSONStreamWriter) {
        switch value {
        case .null: w.null()
        case .bool(let b): w.bool(b)
        case .integer(let i): w.integer(i)
        case .double(let d): w.double(d)
        case .string(let s): w.string(s)
        case .array(let elements):
            w.beginArray()
            for e in elements { stream(e, into: &w) }
            w.endArray()
        case .object(let o):
            w.beginObject()
            for (k, v) in o {
                w.key(k)
                // Mix whole values into the stream too: both paths must agree.
                if case .array = v { w.value(v) } else { stream(v, into: &w) }
            }
            w.endObject()
        }
    }

    func testRandomValuesMatchTheEncoder() {
        var documents = RandomDocuments(seed: 11)
        for _ in 0..<2000 {
            let value = documents.value()
            var w = JSONStreamWriter(capacity: 16)
            stream(value, into: &w)
            let bytes = w.finish()
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), String(decoding: value.encoded(), as: UTF8.self))
        }
    }

    func testCommasAndNesting() {
        var w = JSONStreamWriter()
        w.beginObject()
        w.key("rows")
        w.beginArray()
        w.beginObject(); w.endObject()
        w.beginArray(); w.endArray()
        w.integer(-3)
        w.endArray()
        w.key("a\"b")
        w.null()
        w.endObject()
        let bytes = w.finish()
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), #"{"rows":[{},[],-3],"a\"b":null}"#)
    }
}
