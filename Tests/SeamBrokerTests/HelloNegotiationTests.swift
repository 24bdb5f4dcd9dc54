@testable import SeamBroker
import SeamContext
import SeamJSON
import SeamProtocol
import XCTest

/// `Connection.Hello.negotiate` and what a Hello grants: pure, so each rule is checked here with
/// no broker and no socket (the broker's tests check the same through a real connection).
final class HelloNegotiationTests: XCTestCase {
    private let entities: Set<String> = ["Timer", "Session"]

    private func negotiate(_ text: String, assigned: Connection.Hello? = nil) throws -> Result<Connection.Hello, VarlinkError> {
        let p = try XCTUnwrap(JSON.decode(Array(text.utf8)).objectValue, text)
        return Connection.Hello.negotiate(p, assigned: assigned, known: entities.contains)
    }

    private func refusal(_ text: String, assigned: Connection.Hello? = nil, file: StaticString = #filePath,
                         line: UInt = #line) throws -> VarlinkError? {
        guard case .failure(let e) = try negotiate(text, assigned: assigned) else {
            XCTFail("\(text) was accepted", file: file, line: line)
            return nil
        }
        return e
    }

    func testAClientWithNoRoleIsAPersonWhoTouchesEverything() throws {
        let hello = try negotiate(#"{"version": 1}"#).get()
        XCTAssertEqual(hello.role, "cli")
        XCTAssertEqual(hello.author, "cli")
        XCTAssertEqual(hello.capabilities, .everything)
        XCTAssertFalse(hello.declared)
        XCTAssertEqual(hello.reply(sequence: 7)["author"], .string("cli"))
        XCTAssertEqual(hello.reply(sequence: 7)["sequence"], .integer(7))
    }

    func testAPluginSaysItsNameAndTouchesOnlyWhatItDeclares() throws {
        let bare = try negotiate(#"{"version": 1, "role": "plugin", "name": "notify"}"#).get()
        XCTAssertEqual(bare.author, "plugin:notify")
        XCTAssertEqual(bare.capabilities, .nothing)
        let declared = try negotiate(#"{"version": 1, "role": "plugin", "name": "notify", "capabilities": {"reads": ["Timer"]}}"#).get()
        XCTAssertEqual(declared.capabilities.reads, ["Timer"])
        XCTAssertTrue(declared.declared)
        XCTAssertEqual(try refusal(#"{"version": 1, "role": "plugin"}"#)?.parameters["field"], .string("name"))
    }

    func testEveryBadParameterIsRefusedByName() throws {
        XCTAssertEqual(try refusal(#"{}"#)?.parameters["parameter"], .string("version"))
        XCTAssertEqual(try refusal(#"{"version": 99}"#)?.name, VarlinkError.unsupportedVersion(Interfaces.protocolVersions).name)
        XCTAssertEqual(try refusal(#"{"version": 1, "role": 3}"#)?.parameters["parameter"], .string("role"))
        XCTAssertEqual(try refusal(#"{"version": 1, "name": ["x"]}"#)?.parameters["parameter"], .string("name"))
        XCTAssertEqual(try refusal(#"{"version": 1, "role": "plugin", "name": "a b"}"#)?.parameters["field"], .string("name"))
        XCTAssertEqual(try refusal(#"{"version": 1, "role": "robot"}"#)?.parameters["field"], .string("role"))
        XCTAssertEqual(try refusal(#"{"version": 1, "capabilities": {"reads": ["Nope"]}}"#)?.parameters["field"],
                       .string("capabilities.reads"))
        for role in Connection.Hello.builtInRoles {
            XCTAssertEqual(try refusal(#"{"version": 1, "role": "\#(role)"}"#)?.name, VarlinkError.permissionDenied("").name, role)
        }
    }

    func testANameIsOneToSixtyFourLettersDigitsDashesUnderscoresOrDots() {
        for good in ["a", "seam-notify_2.0", String(repeating: "x", count: 64)] { XCTAssertTrue(Connection.Hello.isValidName(good), good) }
        for bad in ["", String(repeating: "x", count: 65), "a b", "é", "a/b", "a\u{0}"] {
            XCTAssertFalse(Connection.Hello.isValidName(bad), bad)
        }
    }

    func testARoleSeamdStartedKeepsItsRoleAndMayOnlyNarrowWhatItTouches() throws {
        let assigned = Connection.Hello(version: 1, role: "ticker", name: nil, author: "ticker")
        // Its role and name parameters are not the client's to set: they are not even read.
        let hello = try negotiate(#"{"version": 1, "role": "plugin", "name": 5, "capabilities": {"writes": ["Session"]}}"#,
                                  assigned: assigned).get()
        XCTAssertEqual(hello.role, "ticker")
        XCTAssertEqual(hello.author, "ticker")
        XCTAssertEqual(hello.capabilities.writes, ["Session"])
        XCTAssertTrue(hello.declared)
        XCTAssertNotNil(try refusal(#"{"version": 0}"#, assigned: assigned))
    }

    func testReadsAndWritesOutsideTheDeclaredEntitiesAreDeniedWithWhatToDo() throws {
        let hello = try negotiate(#"{"version": 1, "role": "plugin", "name": "p", "capabilities": {"reads": ["Timer"], "writes": ["Session"]}}"#).get()
        XCTAssertNil(hello.deniedRead(member: "Fetch", entity: "Timer"))
        XCTAssertNil(hello.deniedRead(member: "Count", entity: "Session"), "writing an entity includes reading it")
        XCTAssertNil(hello.deniedRead(member: "Save", entity: "Other"), "only Fetch, Count and Subscribe are reads")
        let denied = try XCTUnwrap(hello.deniedRead(member: "Subscribe", entity: "Other"))
        XCTAssertTrue(denied.description.contains("declare it in capabilities.reads"), denied.description)

        let allowed = SaveRequest([.insert(entity: "Session", values: [:])])
        XCTAssertNil(hello.deniedWrite(allowed))
        let refused = SaveRequest([.insert(entity: "Session", values: [:]), .delete(entity: "Timer", uuid: "u")])
        let error = try XCTUnwrap(hello.deniedWrite(refused))
        XCTAssertTrue(error.description.contains("not Timer; declare it in capabilities.writes"), error.description)

        let person = try negotiate(#"{"version": 1}"#).get()
        XCTAssertNil(person.deniedRead(member: "Fetch", entity: "Anything"))
        XCTAssertNil(person.deniedWrite(refused))
    }

    /// The sync worker's own entities: only the sync role (and migrate) writes them — not a
    /// person's `seam`, not a plugin, whatever it declares; anyone may read them.
    func testOnlyTheSyncRoleWritesTheSyncWorkersOwnEntities() throws {
        let owned: Set<String> = ["SyncRecord"]
        func hello(_ text: String) throws -> Result<Connection.Hello, VarlinkError> {
            let p = try XCTUnwrap(JSON.decode(Array(text.utf8)).objectValue, text)
            return Connection.Hello.negotiate(p, assigned: nil, known: { self.entities.contains($0) || owned.contains($0) }, workerOwned: owned)
        }
        let record = SaveRequest([.insert(entity: "Timer", values: [:]), .update(entity: "SyncRecord", uuid: "u", values: [:])])
        let person = try hello(#"{"version": 1}"#).get()
        let refused = try XCTUnwrap(person.deniedWrite(record), "a person's seam may not write SyncRecord")
        XCTAssertEqual(refused.name, "org.seam.Store.PermissionDenied")
        XCTAssertTrue(refused.description.contains("SyncRecord"), refused.description)
        XCTAssertNil(person.deniedWrite(SaveRequest([.insert(entity: "Timer", values: [:])])))

        guard case .failure(let declared) = try hello(#"{"version": 1, "role": "plugin", "name": "p", "capabilities": {"writes": ["SyncRecord"]}}"#)
        else { return XCTFail("a plugin declared it writes SyncRecord") }
        XCTAssertEqual(declared.parameters["field"]?.stringValue, "capabilities.writes")
        let reader = try hello(#"{"version": 1, "role": "plugin", "name": "p", "capabilities": {"reads": ["SyncRecord"]}}"#).get()
        XCTAssertNil(reader.deniedRead(member: "Fetch", entity: "SyncRecord"))

        for role in ["sync", "migrate"] {
            let worker = Connection.Hello(version: 1, role: role, name: nil, author: role, workerOwned: owned)
            XCTAssertNil(worker.deniedWrite(record), role)
        }
        let ticker = Connection.Hello(version: 1, role: "ticker", name: nil, author: "ticker", workerOwned: owned)
        XCTAssertNotNil(ticker.deniedWrite(record), "the ticker is no sync worker")
    }
}
