import SeamJSON
import SeamProtocol
import SeamSchema
import XCTest

/// `QuickSave` must never change what a frame means: every frame it recognises reads the same
/// on the general path (`JSON.decode`, then `Call`, then the broker's reading of `parameters`:
/// the lists `inserts`, `updates` and `deletes`, each item's `entity`, `uuid` and `values`).
final class QuickSaveTests: XCTestCase {
    let uuid = "0b7e3f7a-52a4-4d0e-9c3e-6f1d2a9b8c01"

    func testTheFramesClientsSendAreRecognised() throws {
        let frames = [
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Session","values":{"name":"target","startedAt":1700000000}}]},"id":7}"#,
            #"{"parameters":{"updates":[{"uuid":"\#(uuid)","entity":"Timer","values":{"name":"Tea","repeatCount":3,"groupUUID":null}}]},"method":"org.seam.Store.Save"}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"deletes":[{"entity":"Timer","uuid":"\#(uuid)"}],"inserts":[]},"id":"a-1"}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Timer","values":{}},{"entity":"Group","values":{"on":true,"off":false}}]}}"#,
            #"{"method":"org.seam.Store.Save","parameters":{}}"#,
            // A json attribute's value, an array or object kept as its text.
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Session","values":{"steps":[{"label":"work","seconds":1500},{"label":"rest","seconds":300}],"meta":{},"list":[],"deep":[[[null,true,false,"x",0]]]}}]}}"#,
            // The sync worker's saves: with unchangedSince, anywhere among the parameters.
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Timer","values":{"name":"x"}}],"unchangedSince":4812,"deletes":[]},"id":9}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"unchangedSince":0}}"#,
            // A reply asked for by name (which names the broker takes is its to check).
            #"{"method":"org.seam.Store.Save","parameters":{"reply":"count","inserts":[{"entity":"Timer","values":{"name":"x"}}],"unchangedSince":3},"id":10}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[],"reply":"changes"}}"#,
        ]
        for text in frames {
            XCTAssertNotNil(QuickSave(ArraySlice(text.utf8)), text)
            try assertSameAsGeneralPath(Array(text.utf8))
        }
        let q = try XCTUnwrap(QuickSave(ArraySlice(frames[0].utf8)))
        XCTAssertEqual(q, QuickSave(inserts: [.init(entity: "Session", values: [.init("name", .string("target")), .init("startedAt", .integer(1_700_000_000))])],
                                    id: .integer(7)))
        XCTAssertEqual(QuickSave(ArraySlice(frames[6].utf8))?.unchangedSince, 4812)
        XCTAssertNil(QuickSave(ArraySlice(frames[0].utf8))?.unchangedSince)
        XCTAssertEqual(QuickSave(ArraySlice(frames[8].utf8))?.reply, "count")
        XCTAssertNil(QuickSave(ArraySlice(frames[0].utf8))?.reply)
        let steps = try XCTUnwrap(QuickSave(ArraySlice(frames[5].utf8))?.inserts.first?.values.first)
        XCTAssertEqual(steps, .init("steps", container: #"[{"label":"work","seconds":1500},{"label":"rest","seconds":300}]"#))
        // What SeamClient itself sends.
        let call = Call(method: QuickSave.method, parameters: ["inserts": [["entity": "Session", "values": ["name": "x"]]]], id: .integer(42))
        XCTAssertEqual(QuickSave(call.frame().dropLast()),
                       QuickSave(inserts: [.init(entity: "Session", values: [.init("name", .string("x"))])], id: .integer(42)))
    }

    func testAnythingElseTakesTheGeneralPath() {
        let save = #""method":"org.seam.Store.Save""#
        let refused = [
            #"{"method":"org.seam.Store.Fetch","parameters":{"inserts":[]}}"#,
            #"{\#(save)}"#,
            #"{\#(save),"parameters":{"inserts":null}}"#,
            #"{\#(save),"parameters":{"inserts":[],"inserts":[]}}"#,
            #"{\#(save),"parameters":{"upserts":[]}}"#,
            // An unchangedSince the general path reads otherwise, or refuses, or given twice.
            #"{\#(save),"parameters":{"unchangedSince":null}}"#,
            #"{\#(save),"parameters":{"unchangedSince":-1}}"#,
            #"{\#(save),"parameters":{"unchangedSince":1.0}}"#,
            #"{\#(save),"parameters":{"unchangedSince":"4"}}"#,
            #"{\#(save),"parameters":{"unchangedSince":1234567890123456789}}"#,
            #"{\#(save),"parameters":{"unchangedSince":1,"unchangedSince":2}}"#,
            // A reply that is not a plain string, or given twice.
            #"{\#(save),"parameters":{"reply":null}}"#,
            #"{\#(save),"parameters":{"reply":1}}"#,
            #"{\#(save),"parameters":{"reply":["count"]}}"#,
            #"{\#(save),"parameters":{"reply":"co\"unt"}}"#,
            #"{\#(save),"parameters":{"reply":"count","reply":"changes"}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1,"a":2}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","uuid":"u","values":{}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T"}]}}"#,
            #"{\#(save),"parameters":{"updates":[{"entity":"T","values":{}}]}}"#,
            #"{\#(save),"parameters":{"deletes":[{"entity":"T","uuid":"u","values":{}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":-1}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1.5}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1e3}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":01}}]}}"#,
            // Arrays and objects not written as JSON.encoded() writes them, or past the bounds.
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":[1, 2]}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":{"b":1,"b":2}}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":[1.5]}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":[-1]}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":["x\"y"]}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":["é"]}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":[1,]}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":{"b"}}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":[1}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":"# + String(repeating: "[", count: 17) + String(repeating: "]", count: 17) + "}}]}}",
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":["# + Array(repeating: "0", count: 65).joined(separator: ",") + "]}}]}}",
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":"x\"y"}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":"é"}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":truex}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":nul}}]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}}],"extra":1}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}}]},"more":true}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}}]},"oneway":true}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}}]},"id":null}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}}]}} "#,
            #"{\#(save), "parameters":{"inserts":[]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}},]}}"#,
            #"{\#(save),"parameters":{"inserts":[{"entity":"T","values":{"a":1}}]}"#,
            "", "{}", "[]",
        ]
        for text in refused { XCTAssertNil(QuickSave(ArraySlice(text.utf8)), text) }
    }

    /// Its check for a repeated name is a scan of the names so far: past 64 (more than a row of
    /// any entity has), the general path takes the frame, so 400,000 names cannot make it
    /// quadratic on the broker's thread.
    func testARowOfManyValuesTakesTheGeneralPath() {
        func frame(_ n: Int) -> String {
            let values = (0..<n).map { "\"a\($0)\":0" }.joined(separator: ",")
            return #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"T","values":{"# + values + "}}]}}"
        }
        XCTAssertEqual(QuickSave(ArraySlice(frame(QuickSave.maxValuesPerRow).utf8))?.inserts.first?.values.count,
                       QuickSave.maxValuesPerRow)
        XCTAssertNil(QuickSave(ArraySlice(frame(QuickSave.maxValuesPerRow + 1).utf8)))
    }

    /// A json attribute's array or object at the quick path's bounds (16 deep, 64 members) is
    /// taken and reads the same; one past them goes the general path (`testAnythingElseTakesTheGeneralPath`).
    func testAJSONValueAtTheBoundsIsKeptAsItsText() throws {
        let deep = String(repeating: "[", count: 16) + "1" + String(repeating: "]", count: 16)
        let wide = "{" + (0..<64).map { "\"k\($0)\":[\($0)]" }.joined(separator: ",") + "}"
        for value in [deep, wide] {
            let text = #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"T","values":{"a":"# + value + "}}]}}"
            XCTAssertEqual(QuickSave(ArraySlice(text.utf8))?.inserts.first?.values, [.init("a", container: value)])
            try assertSameAsGeneralPath(Array(text.utf8))
        }
    }

    /// Seeded mutations of recognised frames: whatever is still recognised reads the same on
    /// the general path.
    func testMutatedFramesNeverMeanSomethingElse() throws {
        let seeds = [
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Session","values":{"name":"t","startedAt":17,"ok":true}}]},"id":12}"#,
            #"{"id":"x","parameters":{"deletes":[{"uuid":"u1","entity":"Timer"}],"updates":[{"entity":"T","uuid":"u2","values":{"a":null,"b":false}}]},"method":"org.seam.Store.Save"}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"Session","values":{"steps":[{"label":"w","seconds":15},{"a":[1,{"b":{}}]}],"n":"x"}}]},"id":3}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"unchangedSince":907,"updates":[{"entity":"T","uuid":"u2","values":{"a":1}}]},"id":4}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"reply":"count","inserts":[{"entity":"T","values":{"a":1}}]},"id":5}"#,
        ]
        try assertMutationsReadTheSame(seeds, seed: 0x5A7E_0001, recognises: { QuickSave(ArraySlice($0)) != nil },
                                       sameAsGeneralPath: { try assertSameAsGeneralPath($0) })
    }

    /// The general path's reading of the same bytes: a Save call, not `more` nor `oneway`, the
    /// same `id`, and — list by list, item by item — the same entity, uuid and values.
    private func assertSameAsGeneralPath(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let q = try XCTUnwrap(QuickSave(ArraySlice(bytes)), text, file: file, line: line)
        let call = try Call(JSON.decode(ArraySlice(bytes), limits: JSONLimits(maxDepth: Limits.maxJSONDepth)))
        XCTAssertEqual(call.method, QuickSave.method, text, file: file, line: line)
        XCTAssertEqual(call.id, q.id, text, file: file, line: line)
        XCTAssertFalse(call.more, text, file: file, line: line)
        XCTAssertFalse(call.oneway, text, file: file, line: line)
        XCTAssertEqual(call.parameters["unchangedSince"]?.int64Value, q.unchangedSince, text, file: file, line: line)
        if q.unchangedSince == nil { XCTAssertNil(call.parameters["unchangedSince"], text, file: file, line: line) }
        XCTAssertEqual(call.parameters["reply"]?.stringValue, q.reply, text, file: file, line: line)
        if q.reply == nil { XCTAssertNil(call.parameters["reply"], text, file: file, line: line) }
        for (key, items) in [("inserts", q.inserts), ("updates", q.updates), ("deletes", q.deletes)] {
            let general = call.parameters[key]?.arrayValue ?? []
            XCTAssertEqual(general.count, items.count, "\(key): \(text)", file: file, line: line)
            for (g, item) in zip(general, items) {
                XCTAssertEqual(g["entity"], .string(item.entity), text, file: file, line: line)
                XCTAssertEqual(g["uuid"]?.stringValue, item.uuid, text, file: file, line: line)
                guard key != "deletes" else { continue }
                guard case .object(let values)? = g["values"] else { return XCTFail("values: \(text)", file: file, line: line) }
                XCTAssertEqual(values.count, item.values.count, text, file: file, line: line)
                for v in item.values {
                    switch v.content {
                    case .scalar(let json): XCTAssertEqual(values[v.name], json, text, file: file, line: line)
                    case .container(let kept):
                        // What the broker stores of a json attribute read as a tree: its encoding.
                        XCTAssertEqual(values[v.name].map { String(decoding: $0.encoded(), as: UTF8.self) }, kept, text, file: file, line: line)
                    }
                }
            }
        }
    }
}
