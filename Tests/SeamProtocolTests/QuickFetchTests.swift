import SeamJSON
import SeamProtocol
import SeamSchema
import XCTest

/// `QuickFetch` must never change what a frame means: every frame it recognises is read by the
/// general path (`JSON.decode`, then `Call`) as the same fetch, and the frames it refuses go
/// there whole.
final class QuickFetchTests: XCTestCase {
    let uuid = "0b7e3f7a-52a4-4d0e-9c3e-6f1d2a9b8c01"

    func testTheFramesClientsSendAreRecognised() throws {
        let cases: [(String, JSON?)] = [
            (#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"\#(uuid)"}}"#, nil),
            (#"{"method":"org.seam.Store.Fetch","parameters":{"uuid":"\#(uuid)","entity":"Session"},"id":7}"#, .integer(7)),
            (#"{"id":"a-1","parameters":{"entity":"Timer","uuid":"\#(uuid)"},"method":"org.seam.Store.Fetch"}"#, .string("a-1")),
            (#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"\#(uuid)"},"id":0}"#, .integer(0)),
            (#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"\#(uuid)"},"id":999999999999999999}"#,
             .integer(999_999_999_999_999_999)),
        ]
        for (text, id) in cases {
            let q = try XCTUnwrap(QuickFetch(ArraySlice(text.utf8)), text)
            XCTAssertEqual(q.uuid, uuid)
            XCTAssertEqual(q.id, id, text)
            try assertSameAsGeneralPath(Array(text.utf8))
        }
        // What SeamClient itself sends.
        let frame = Call(method: QuickFetch.method, parameters: ["entity": "Session", "uuid": .string(uuid)], id: .integer(42)).frame()
        XCTAssertEqual(QuickFetch(frame.dropLast()), QuickFetch(entity: "Session", uuid: uuid, id: .integer(42)))
    }

    func testAnythingElseTakesTheGeneralPath() {
        let refused = [
            #"{"method":"org.seam.Store.Count","parameters":{"entity":"Session","uuid":"u"}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session"}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u","fields":["name"]}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"more":true}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"oneway":false}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u","uuid":"v"}}"#,
            #"{"method":"org.seam.Store.Fetch","method":"org.seam.Store.Fetch","parameters":{"entity":"S","uuid":"u"}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":1,"id":2}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Sess\u0069on","uuid":"u"}}"#,
            #"{"method":"org.seam.Store.Fetch", "parameters":{"entity":"Session","uuid":"u"}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":-1}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":01}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":1.5}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":1e3}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":1234567890123456789}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"},"id":null}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"}} "#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":5}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Séance","uuid":"u"}}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"u"}"#,
            #"["method","org.seam.Store.Fetch"]"#, "", "{}",
        ]
        for text in refused { XCTAssertNil(QuickFetch(ArraySlice(text.utf8)), text) }
    }

    /// Seeded mutations of recognised frames: whatever is still recognised reads the same on
    /// the general path; the rest must simply not be recognised wrongly.
    func testMutatedFramesNeverMeanSomethingElse() throws {
        let seeds = [#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"\#(uuid)"},"id":12}"#,
                     #"{"id":"x","parameters":{"uuid":"u1","entity":"Timer"},"method":"org.seam.Store.Fetch"}"#]
        try assertMutationsReadTheSame(seeds, seed: 0x0F37_C401, recognises: { QuickFetch(ArraySlice($0)) != nil },
                                       sameAsGeneralPath: { try assertSameAsGeneralPath($0) })
    }

    private func assertSameAsGeneralPath(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let q = try XCTUnwrap(QuickFetch(ArraySlice(bytes)), text, file: file, line: line)
        let call = try Call(JSON.decode(ArraySlice(bytes), limits: JSONLimits(maxDepth: Limits.maxJSONDepth)))
        XCTAssertEqual(call.method, QuickFetch.method, text, file: file, line: line)
        XCTAssertEqual(call.parameters.count, 2, text, file: file, line: line)
        XCTAssertEqual(call.parameters["entity"], .string(q.entity), text, file: file, line: line)
        XCTAssertEqual(call.parameters["uuid"], .string(q.uuid), text, file: file, line: line)
        XCTAssertEqual(call.id, q.id, text, file: file, line: line)
        XCTAssertFalse(call.more, text, file: file, line: line)
        XCTAssertFalse(call.oneway, text, file: file, line: line)
    }
}
