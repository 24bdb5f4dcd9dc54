@testable import SeamBroker
import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema
import XCTest

/// `WireRequests`: a call's parameters read into fetch and save requests, and a save's error
/// placed in the call — pure, so each rule is checked here without a broker.
final class WireRequestsTests: XCTestCase {
    private var schema: Schema!
    private var note: Entity { schema.entity("Note")!.entity }

    override func setUpWithError() throws {
        var m = ModelDraft(model: "Notes")
        try m.addConfiguration("Cloud")
        try m.addEntity(Entity("Note", attributes: [Attribute("uuid", .uuid), Attribute("title", .string),
                                                    Attribute("pinned", .bool, default: .bool(false))]), in: "Cloud")
        schema = try Schema([try VersionedModel([m])])
    }

    private func object(_ text: String) throws -> JSONObject {
        try XCTUnwrap(JSON.decode(Array(text.utf8)).objectValue, text)
    }

    private func fetch(_ text: String, defaultLimit: Int? = Limits.maxFetchRows, offset: Bool = true) throws -> Result<FetchRequest, VarlinkError> {
        WireRequests.fetch(try object(text), entity: note, schema: schema, defaultLimit: defaultLimit, offset: offset)
    }

    private func save(_ text: String) throws -> Result<SaveRequest, VarlinkError> {
        WireRequests.save(try object(text), schema: schema, types: { $0.attributeTypes })
    }

    private func failure<T>(_ result: Result<T, VarlinkError>, file: StaticString = #filePath, line: UInt = #line) -> VarlinkError? {
        guard case .failure(let e) = result else {
            XCTFail("expected a failure, got \(result)", file: file, line: line)
            return nil
        }
        return e
    }

    func testAFetchTakesItsPartsAndTheDefaultLimit() throws {
        let r = try fetch(#"{"entity": "Note", "predicate": "title == $t", "parameters": {"t": "a"}, "sort": "title", "offset": 5, "fields": ["title", "title", "pinned"]}"#).get()
        XCTAssertEqual(r.entity, "Note")
        XCTAssertEqual(r.predicate, "title == $t")
        XCTAssertEqual(r.sort, "title")
        XCTAssertEqual(r.offset, 5)
        XCTAssertEqual(r.limit, Limits.maxFetchRows, "without a limit, at most the most a Fetch returns")
        XCTAssertEqual(r.attributes, ["title", "pinned"], "a field named twice is one field")
        XCTAssertNil(try fetch(#"{"entity": "Note"}"#, defaultLimit: nil).get().limit, "a subscription has no limit unless it asks")
    }

    func testAFetchNamesTheParameterItRefuses() throws {
        let cases: [(String, String)] = [
            (#"{"predicate": 3}"#, "predicate"), (#"{"sort": []}"#, "sort"), (#"{"parameters": []}"#, "parameters"),
            (#"{"parameters": {"p": {"x": 1}}}"#, "parameters.p"), (#"{"limit": "10"}"#, "limit"), (#"{"limit": 1.5}"#, "limit"),
            (#"{"offset": true}"#, "offset"), (#"{"fields": "title"}"#, "fields"), (#"{"fields": [1]}"#, "fields"),
        ]
        for (text, parameter) in cases {
            let e = try XCTUnwrap(failure(try fetch(text)), text)
            XCTAssertEqual(e.name, "org.varlink.service.InvalidParameter", text)
            XCTAssertEqual(e.parameters["parameter"]?.stringValue, parameter, text)
        }
        // An integer out of its range is a request that does not check: InvalidRequest naming it.
        let outOfRange: [(String, String)] = [
            (#"{"limit": -1}"#, "limit"), (#"{"limit": \#(Limits.maxFetchRows + 1)}"#, "limit"), (#"{"offset": -1}"#, "offset"),
        ]
        for (text, field) in outOfRange {
            let e = try XCTUnwrap(failure(try fetch(text)), text)
            XCTAssertEqual(e.name, "org.seam.Store.InvalidRequest", text)
            XCTAssertEqual(e.parameters["field"]?.stringValue, field, text)
        }
        XCTAssertEqual(try fetch(#"{"limit": 0}"#).get().limit, 0, "limit 0 is a limit")
        let unknown = try XCTUnwrap(failure(try fetch(#"{"fields": ["colour"]}"#)))
        XCTAssertEqual(unknown.parameters["field"]?.stringValue, "fields")
        XCTAssertTrue(unknown.description.contains("colour"), unknown.description)
        // Subscribe has no offset: like any parameter a method does not know, it is ignored.
        XCTAssertNil(try fetch(#"{"offset": -1}"#, offset: false).get().offset)
    }

    func testASaveReadsEachKindInOrder() throws {
        let r = try save(#"{"inserts": [{"entity": "Note", "values": {"title": "a"}}], "updates": [{"entity": "Note", "uuid": "u1", "values": {"pinned": true}}], "deletes": [{"entity": "Note", "uuid": "u2"}], "unchangedSince": 7}"#).get()
        XCTAssertEqual(r.operations.map(\.kind), [.insert, .update, .delete])
        XCTAssertEqual(r.unchangedSince, 7)
        XCTAssertTrue(r.valuesChecked)
        XCTAssertEqual(r.reply, .changes, "the list of changes unless asked otherwise")
        XCTAssertEqual(try save(#"{"reply": "count"}"#).get().reply, .count)
        XCTAssertEqual(try save(#"{"reply": null}"#).get().reply, .changes)
    }

    func testASaveNamesThePlaceOfWhatItRefuses() throws {
        let cases: [(String, String, String)] = [
            (#"{"inserts": 1}"#, "org.varlink.service.InvalidParameter", "inserts"),
            (#"{"inserts": [{"values": {}}]}"#, "org.varlink.service.InvalidParameter", "inserts[0]"),
            (#"{"updates": [{"entity": "Note", "values": {}}]}"#, "org.varlink.service.InvalidParameter", "updates[0].uuid"),
            (#"{"inserts": [{"entity": "Note"}]}"#, "org.varlink.service.InvalidParameter", "inserts[0].values"),
            (#"{"deletes": [{"entity": "Nope", "uuid": "x"}]}"#, "org.seam.Store.InvalidRequest", "deletes[0].entity"),
            (#"{"inserts": [{"entity": "Note", "values": {"colour": "red"}}]}"#, "org.seam.Store.InvalidRequest", "inserts[0].values.colour"),
            (#"{"inserts": [{"entity": "Note", "values": {}}, {"entity": "Note", "values": {"pinned": "yes"}}]}"#, "org.seam.Store.InvalidRequest",
             "inserts[1].values.pinned"),
            (#"{"unchangedSince": -1}"#, "org.varlink.service.InvalidParameter", "unchangedSince"),
            (#"{"reply": "rows"}"#, "org.seam.Store.InvalidRequest", "reply"),
            (#"{"reply": 1}"#, "org.seam.Store.InvalidRequest", "reply"),
            (#"{"reply": "Count"}"#, "org.seam.Store.InvalidRequest", "reply"),
        ]
        for (text, name, place) in cases {
            let e = try XCTUnwrap(failure(try save(text)), text)
            XCTAssertEqual(e.name, name, text)
            XCTAssertEqual(e.parameters["parameter"]?.stringValue ?? e.parameters["field"]?.stringValue, place, text)
        }
    }

    func testAStoresErrorIsPlacedAtItsOperationOfItsKind() {
        var request = SaveRequest()
        request.insert("Note", [:])
        request.update("Note", "u1", [:])
        request.insert("Note", [:])
        request.update("Note", "u2", [:])
        request.delete("Note", "u3")
        var error = ContextError(.wrongType(entity: "Note", attribute: "title", expected: .string, got: "a number"))
        error.operation = 3
        XCTAssertEqual(WireRequests.error(error, in: request).parameters["field"]?.stringValue, "updates[1].values.title")
        error.operation = 2
        XCTAssertEqual(WireRequests.error(error, in: request).parameters["field"]?.stringValue, "inserts[1].values.title")
        var tooLarge = ContextError(.valueTooLarge(entity: "Note", attribute: "title", bytes: 10, limit: 4))
        tooLarge.operation = 0
        let e = WireRequests.error(tooLarge, in: request)
        XCTAssertEqual(e.parameters["field"]?.stringValue, "inserts[0].values.title")
        XCTAssertEqual(e.parameters["limit"]?.int64Value, 4)
        var missing = ContextError(.notFound(entity: "Note", uuid: "u3"))
        missing.operation = 4
        XCTAssertEqual(WireRequests.error(missing, in: request).name, "org.seam.Store.NotFound", "an error about no value is the store's own")
    }
}
