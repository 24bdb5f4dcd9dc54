import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamTestSupport
import XCTest

/// seamd as a real process: the protocol end to end through SeamClient.
final class BrokerTests: XCTestCase {
    var broker: BrokerProcess!

    override func setUpWithError() throws { broker = try BrokerProcess() }
    override func tearDown() {
        broker?.stop()
        broker = nil
    }

    func client() throws -> SeamConnection { try SeamConnection.connect(path: broker.socketPath) }

    func testServiceIntrospection() throws {
        let c = try client()
        let info = try c.call("org.varlink.service.GetInfo")
        XCTAssertEqual(info["vendor"]?.stringValue, "Seam")
        XCTAssertEqual(info["product"]?.stringValue, "seamd")
        XCTAssertNotNil(info["version"]?.stringValue)
        XCTAssertNotNil(info["url"]?.stringValue)
        XCTAssertEqual(info["interfaces"]?.arrayValue?.compactMap(\.stringValue), ["org.seam.Maintenance", "org.seam.Metrics", "org.seam.Migration", "org.seam.Store", "org.seam.Sync", "org.seam.Timers", "org.varlink.service"])
        let description = try c.call("org.varlink.service.GetInterfaceDescription", ["interface": "org.seam.Store"])
        XCTAssertEqual(description["description"]?.stringValue, Interfaces.store)
        XCTAssertTrue(Interfaces.store.hasPrefix("# Seam's store broker") && Interfaces.store.contains("interface org.seam.Store"))
        XCTAssertThrowsError(try c.call("org.varlink.service.GetInterfaceDescription", ["interface": "org.example.Nope"])) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.varlink.service.InterfaceNotFound")
        }
    }

    /// Status answers with exactly the members its interface declares (a client generated from
    /// the definition must find every one, and nothing it was not told of).
    func testStatusHoldsWhatItsInterfaceDeclares() throws {
        let text = Interfaces.store
        let start = try XCTUnwrap(text.range(of: "method Status() -> (")).upperBound
        let end = try XCTUnwrap(text[start...].range(of: "\n)")).lowerBound
        let declared = Set(text[start..<end].split(separator: "\n").compactMap { line in
            line.split(separator: ":").first.map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        })
        XCTAssertEqual(Set(try client().status().keys), declared)
    }

    func testTheCommittedInterfaceFilesMatchWhatTheBrokerServes() throws {
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.seam.Store.varlink"), Interfaces.store)
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.varlink.service.varlink"), Interfaces.service)
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.seam.Migration.varlink"), Interfaces.migration)
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.seam.Sync.varlink"), Interfaces.sync)
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.seam.Maintenance.varlink"), Interfaces.maintenance)
        XCTAssertEqual(try RepositoryFiles.text("Protocol/org.seam.Metrics.varlink"), Interfaces.metrics)
    }

    func testHelloSaveFetchCountStatus() throws {
        let c = try client()
        XCTAssertThrowsError(try c.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "Tea"]]]])) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.PermissionDenied", "read-only until Hello")
        }
        let hello = try c.hello()
        XCTAssertEqual(hello["author"]?.stringValue, "cli")
        let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let saved = try c.call("org.seam.Store.Save", ["inserts": [
            ["entity": "Timer", "values": ["uuid": .string(uuid), "name": "Tea", "steps": [["label": "steep", "seconds": 180]]]],
            ["entity": "Session", "values": ["timerUUID": .string(uuid), "startedAt": "2026-11-30T22:16:10.250000Z"]],
        ]])
        XCTAssertEqual(saved["sequence"]?.int64Value, 1)
        XCTAssertEqual(saved["changes"]?.arrayValue?.compactMap { $0["store"]?.stringValue }, ["Cloud", "Local"])
        let rows = try c.call("org.seam.Store.Fetch", ["entity": "Timer", "predicate": "name BEGINSWITH[c] $p",
                                                        "parameters": ["p": "te"], "fields": ["name", "steps"]])
        let row = try XCTUnwrap(rows["rows"]?.arrayValue?.first)
        XCTAssertEqual(row["uuid"]?.stringValue, uuid)
        XCTAssertEqual(row["steps"]?[0]?["seconds"]?.int64Value, 180, "json attributes are JSON values on the wire")
        let session = try XCTUnwrap(try c.call("org.seam.Store.Fetch", ["entity": "Session"])["rows"]?.arrayValue?.first)
        XCTAssertEqual(session["startedAt"]?.stringValue, "2026-11-30T22:16:10.250000Z", "dates are RFC 3339")
        XCTAssertEqual(session["timerUUID"]?.stringValue, uuid)
        XCTAssertEqual(session["pausedAt"], .null)
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Session", "predicate": "state == 'running'"])["count"]?.int64Value, 1)
        let deleted = try c.call("org.seam.Store.Save", ["deletes": [["entity": "Timer", "uuid": .string(uuid)]]])
        XCTAssertEqual(Set(deleted["changes"]?.arrayValue?.compactMap { $0["entity"]?.stringValue } ?? []), ["Timer", "Session"],
                       "the cascade crosses the seam")
        let status = try c.call("org.seam.Store.Status")
        XCTAssertEqual(status["sequence"]?.int64Value, 2)
        XCTAssertGreaterThanOrEqual(status["connections"]?.int64Value ?? 0, 1)
        XCTAssertEqual(status["stores"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["Cloud", "Local"])
        for store in status["stores"]?.arrayValue ?? [] {
            XCTAssertNotNil(store["checkpoints"]?.int64Value, "\(store)")
            XCTAssertEqual(store["checkpointError"], .null)
        }
        let schema = try c.call("org.seam.Store.Schema")
        XCTAssertEqual(schema["models"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["Timers", "SyncMetadata"])
    }

    /// A client that saves back to back, synced: between its saves seamd copies back what the
    /// checkpoint thread left, so the WAL starts over every four thousand frames or so, instead
    /// of growing to the eight thousand after which the writer would stop to checkpoint inline.
    /// A client that sends its calls and closes at once, reading no reply: every call it sent
    /// is handled. seamd closed a connection whose reply it could not write (the peer gone), with
    /// the calls after that one still unread.
    func testAClientThatSendsAndClosesLosesNoCall() throws {
        var frames = [#"{"method":"org.seam.Store.Hello","parameters":{"version":1,"role":"cli"}}"#]
        func save(_ i: Int) -> String {
            #"{"method":"org.seam.Store.Save","oneway":true,"parameters":{"inserts":[{"entity":"Timer","values":{"name":"t\#(i)"}}]}}"#
        }
        frames += (0..<3000).map(save)
        // Among the last ones, still unread when it closes (a socket buffer's worth), calls
        // with replies: seamd's writes of them fail, the client being gone.
        for i in 3000..<4000 {
            frames.append(save(i))
            if i % 100 == 0 { frames.append(#"{"method":"org.seam.Store.Count","parameters":{"entity":"Timer"}}"#) }
        }
        do {
            let raw = try RawClient(broker.socketPath)
            raw.send(Array(frames.joined(separator: "\0").utf8) + [0])
        }  // closed here, its replies unread
        let c = try client()
        var count = 0
        try? eventually(10, "every save is stored") {
            count = try c.count("Timer")
            return count == 4000
        }
        XCTAssertEqual(count, 4000)
    }

    /// A seamd at `durability` given `saves` saves back to back, each a few frames: the largest
    /// the Local store's WAL file grew, the most frames Status said it held, and its Status entry.
    private func saveBackToBack(durability: String, _ saves: Int) throws -> (largestWAL: UInt64, mostFrames: Int64, local: JSON?) {
        let broker = try BrokerProcess(arguments: ["--durability", durability])
        defer { _ = broker.stop() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let wal = broker.dataDirectory + "/Local.sqlite-wal"
        func local() throws -> JSON? {
            try c.call("org.seam.Store.Status")["stores"]?.arrayValue?.first { $0["name"]?.stringValue == "Local" }
        }
        var largest: UInt64 = 0, frames: Int64 = 0
        for i in 0..<saves {
            try c.call("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": .string("s\(i)"), "startedAt": .integer(Int64(1_700_000_000 + i)),
            ]]]])
            let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? UInt64) ?? 0
            largest = max(largest, size)
            if i % 50 == 0 { frames = max(frames, try local()?["walFrames"]?.int64Value ?? 0) }
        }
        return (largest, frames, try local())
    }

    /// Unsynced, the checkpoint thread once chased the writer: its fdatasyncs outlasted the gap
    /// between saves, no checkpoint finished between two, and the WAL never started over (250 MB
    /// under the channel benchmark). The writer now catches up in its idle turns, as synced.
    func testTheWALStartsOverUnderUnsyncedSavesBackToBack() throws {
        let (largest, frames, local) = try saveBackToBack(durability: "normal", 9_000)
        XCTAssertLessThan(largest, 40 << 20, "the WAL started over (never starting over, it would pass 150 MB)")
        XCTAssertLessThan(frames, 9_000, "frames in the WAL, as Status says: under the 8,000 limit and a few saves")
        XCTAssertGreaterThan(frames, 0)
        XCTAssertEqual(local?["checkpointError"], .null)
        XCTAssertLessThan(local?["checkpoints"]?.int64Value ?? 0, 400, "a checkpoint per four thousand frames or so, not per save")
    }

    func testTheWALStartsOverUnderSyncedSavesBackToBack() throws {
        // Four or five frames each: some 19,500 frames in all.
        let (largest, _, local) = try saveBackToBack(durability: "full", 4_500)
        XCTAssertLessThan(largest, 32 << 20, "the WAL started over (never starting over, it would pass 75 MB)")
        XCTAssertGreaterThanOrEqual(local?["checkpoints"]?.int64Value ?? 0, 4, "\(local ?? .null)")
        XCTAssertEqual(local?["checkpointError"], .null)
        // A round per four thousand frames or so, and catch-ups when the writer lets one in
        // (a few a second, spaced out: see `Checkpointer.catchUpDue`), never one per save.
        XCTAssertLessThan(local?["checkpoints"]?.int64Value ?? 0, 4_500 / 4, "not a checkpoint per save")
        // The broker flushes the WAL itself: once per save (and for the catch-ups' own commits, none).
        XCTAssertGreaterThanOrEqual(local?["walSyncs"]?.int64Value ?? 0, 4_500, "every save on the disk before its reply")
    }

    /// A fetch by uuid sent as clients write it takes seamd's quick path (`QuickFetch`); the same
    /// call with one space in it takes the general one. Their replies are the same bytes — a row,
    /// no row, an unknown entity, a uuid that is no uuid, a read the capabilities refuse — twice,
    /// so that the second comes from the row cache.
    func testAFetchByUUIDAnswersTheSameOnBothPaths() throws {
        let c = try client()
        try c.hello()
        let uuid = "5d0c2a1e-7b3f-4c8d-9e2a-1f4b6c8d0e2a"
        try c.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["uuid": .string(uuid), "name": "Tea"]]]])
        let raw = try RawClient(broker.socketPath)
        func both(_ parameters: String, id: String = "") -> (quick: String?, general: String?) {
            raw.send(#"{"method":"org.seam.Store.Fetch","parameters":{\#(parameters)}\#(id)}"#)
            let quick = raw.readFrame()
            raw.send(#"{ "method":"org.seam.Store.Fetch","parameters":{\#(parameters)}\#(id)}"#)
            return (quick, raw.readFrame())
        }
        let cases = [#""entity":"Timer","uuid":"\#(uuid)""#, #""uuid":"\#(uuid)","entity":"Timer""#,
                     #""entity":"Timer","uuid":"0f8fad5b-d9cb-469f-a165-70867728950e""#,
                     #""entity":"Nope","uuid":"\#(uuid)""#, #""entity":"Timer","uuid":"not a uuid""#]
        for parameters in cases + cases {
            for id in ["", #","id":7"#, #","id":"x""#] {
                let (quick, general) = both(parameters, id: id)
                XCTAssertNotNil(quick, parameters)
                XCTAssertEqual(quick, general, parameters + id)
            }
        }
        XCTAssertTrue(both(cases[0]).quick?.contains(#""name":"Tea""#) == true)
        // A plugin that reads only Session is refused the Timer alike on both paths.
        raw.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1,"role":"plugin","name":"p","capabilities":{"reads":["Session"]}}}"#)
        XCTAssertNotNil(raw.readFrame())
        let (quick, general) = both(cases[0], id: #","id":3"#)
        XCTAssertTrue(quick?.contains("org.seam.Store.PermissionDenied") == true, quick ?? "nil")
        XCTAssertEqual(quick, general)
    }

    /// A save sent as clients write it takes seamd's quick path (`QuickSave`); the same call with
    /// one space in it takes the general one. Their replies match: errors byte for byte, and
    /// successful saves up to the uuid and sequence they were given.
    func testASaveAnswersTheSameOnBothPaths() throws {
        let raw = try RawClient(broker.socketPath)
        func both(_ parameters: String) -> (quick: String?, general: String?) {
            raw.send(#"{"method":"org.seam.Store.Save","parameters":\#(parameters),"id":5}"#)
            let quick = raw.readFrame()
            raw.send(#"{ "method":"org.seam.Store.Save","parameters":\#(parameters),"id":5}"#)
            return (quick, raw.readFrame())
        }
        let missing = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let refusals = [#"{"inserts":[{"entity":"Timer","values":{"name":"Tea"}}]}"#,  // before Hello: read-only
                        #"{"deletes":[{"entity":"Timer","uuid":"\#(missing)"}]}"#]
        let (q0, g0) = both(refusals[0])
        XCTAssertTrue(q0?.contains("org.seam.Store.PermissionDenied") == true, q0 ?? "nil")
        XCTAssertEqual(q0, g0)
        raw.send(#"{"method":"org.seam.Store.Hello","parameters":{"version":1}}"#)
        XCTAssertNotNil(raw.readFrame())
        for parameters in [refusals[1], #"{"inserts":[{"entity":"Nope","values":{}}]}"#,
                           #"{"inserts":[{"entity":"Timer","values":{"name":5}}]}"#,
                           #"{"inserts":[{"entity":"Timer","values":{"colur":"red"}}]}"#,
                           #"{"updates":[{"entity":"Timer","uuid":"\#(missing)","values":{"name":"x"}}]}"#] {
            let (quick, general) = both(parameters)
            XCTAssertTrue(quick?.contains(#""error":"org."#) == true, quick ?? "nil")
            XCTAssertEqual(quick, general, parameters)
        }
        func shape(_ frame: String?) throws -> JSON {
            var reply = try JSON.decode(ArraySlice(Array((frame ?? "").utf8)))
            guard case .object(var o) = reply, case .object(var p)? = o["parameters"] else { return reply }
            p["sequence"] = .null
            if case .array(var changes)? = p["changes"] {
                for i in changes.indices { if case .object(var c) = changes[i] { c["uuid"] = .null; changes[i] = .object(c) } }
                p["changes"] = .array(changes)
            }
            o["parameters"] = .object(p)
            reply = .object(o)
            return reply
        }
        let (quick, general) = both(#"{"inserts":[{"entity":"Timer","values":{"name":"Tea","repeatCount":2,"groupUUID":null}}]}"#)
        XCTAssertTrue(quick?.contains(#""kind":"insert""#) == true, quick ?? "nil")
        XCTAssertEqual(try shape(quick), try shape(general))
        let c = try client()
        try c.hello()
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer", "predicate": "name == 'Tea' && repeatCount == 2"])["count"]?.int64Value, 2)
    }

    func testTypedErrorsForBadRequests() throws {
        let c = try client()
        try c.hello()
        func expect(_ name: String, _ method: String, _ p: JSONObject, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try c.call(method, p), file: file, line: line) { e in
                XCTAssertEqual((e as? ClientError)?.remoteName, name, "\(e)", file: file, line: line)
            }
        }
        expect("org.varlink.service.MethodNotFound", "org.seam.Store.Frobnicate", [:])
        expect("org.varlink.service.InterfaceNotFound", "org.example.Other.Call", [:])
        expect("org.varlink.service.InvalidParameter", "org.seam.Store.Fetch", [:])
        expect("org.varlink.service.InvalidParameter", "org.seam.Store.Fetch", ["entity": 7])
        expect("org.varlink.service.InvalidParameter", "org.seam.Store.Fetch", ["entity": "Timer", "limit": "ten"])
        expect("org.seam.Store.InvalidRequest", "org.seam.Store.Fetch", ["entity": "Alarm"])
        expect("org.seam.Store.InvalidRequest", "org.seam.Store.Fetch", ["entity": "Timer", "predicate": "name =="])
        expect("org.seam.Store.InvalidRequest", "org.seam.Store.Fetch", ["entity": "Timer", "predicate": "colur == 'x'"])
        expect("org.seam.Store.InvalidRequest", "org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": 5]]]])
        // The member at fault is named: a sort error is the sort's, not the predicate's.
        XCTAssertThrowsError(try c.call("org.seam.Store.Fetch", ["entity": "Timer", "predicate": "name == 'x'", "sort": "name, name"])) { e in
            guard case .remote(let v)? = (e as? ClientError)?.kind else { return XCTFail("\(e)") }
            XCTAssertEqual(v.parameters["field"]?.stringValue, "sort", "\(e)")
        }
        // A value the store refuses is named by its place in the call, as a value the wire refuses is.
        func field(_ p: JSONObject) -> String? {
            do { _ = try c.call("org.seam.Store.Save", p) } catch {
                if case .remote(let v) = error.kind { return v.parameters["field"]?.stringValue }
            }
            return nil
        }
        let tea = try c.save([.insert(entity: "Timer", values: ["name": "Tea"])]).inserted[0]
        XCTAssertEqual(field(["inserts": [["entity": "Timer", "values": ["name": "a"]],
                                          ["entity": "Timer", "values": ["name": "b", "uuid": "0F8FAD5B-D9CB-469F-A165-70867728950E"]]]]),
                       "inserts[1].values.uuid")
        XCTAssertEqual(field(["inserts": [["entity": "Timer", "values": ["name": "a"]]],
                              "updates": [["entity": "Timer", "uuid": .string(tea), "values": ["name": "ok"]],
                                          ["entity": "Timer", "uuid": .string(tea), "values": ["name": "Te\u{0}a"]]]]),
                       "updates[1].values.name")
        XCTAssertEqual(field(["updates": [["entity": "Timer", "uuid": .string(tea), "values": ["name": .null]]]]), "updates[0].values.name")
        // Count takes no sort: like a limit, one given is ignored, not checked.
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer", "sort": "nosuch"])["count"]?.int64Value, 1, "Tea")
        expect("org.seam.Store.NotFound", "org.seam.Store.Save",
               ["deletes": [["entity": "Timer", "uuid": "00000000-0000-4000-8000-000000000000"]]])
        expect("org.seam.Store.UnsupportedVersion", "org.seam.Store.Hello", ["version": 99])
        expect("org.seam.Store.PermissionDenied", "org.seam.Store.Hello", ["version": 1, "role": "ticker"])
        let timer = try c.call("org.seam.Store.Save", ["inserts": [["entity": "Timer", "values": ["name": "Tea"]]]])["changes"]?[0]?["uuid"]
        _ = try c.call("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": ["timerUUID": timer!, "startedAt": 1]]]])
        expect("org.seam.Store.Conflict", "org.seam.Store.Save",
               ["inserts": [["entity": "Session", "values": ["timerUUID": timer!, "startedAt": 2]]]])
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Session"])["count"]?.int64Value, 1, "the failed save changed nothing")
    }

    /// A save with `unchangedSince` holds only if the history after that number left its rows
    /// alone: a change to one of them (a link rule's included) refuses it whole; changes to other
    /// rows, and to the Local store (which keeps no history), do not.
    func testASaveUnchangedSinceIsRefusedWhenTheHistoryTouchedItsRows() throws {
        let c = try client()
        try c.hello()
        func insert(_ entity: String, _ values: JSONObject) throws -> (uuid: JSON, sequence: Int64) {
            let r = try c.call("org.seam.Store.Save", ["inserts": [["entity": .string(entity), "values": .object(values)]]])
            return (try XCTUnwrap(r["changes"]?[0]?["uuid"]), try XCTUnwrap(r["sequence"]?.int64Value))
        }
        func rename(_ uuid: JSON, _ name: String, since: Int64) throws -> Int64? {
            try c.call("org.seam.Store.Save", ["updates": [["entity": "Timer", "uuid": uuid, "values": ["name": .string(name)]]],
                                               "unchangedSince": .integer(since)])["sequence"]?.int64Value
        }
        func name(_ uuid: JSON) throws -> String? {
            try c.call("org.seam.Store.Fetch", ["entity": "Timer", "predicate": "uuid == $u", "parameters": ["u": uuid]])["rows"]?[0]?["name"]?.stringValue
        }
        let group = try insert("UserGroup", ["name": "Kitchen"])
        let tea = try insert("Timer", ["name": "Tea", "groupUUID": group.uuid])
        let read = tea.sequence
        let egg = try insert("Timer", ["name": "Egg"])
        _ = try insert("Session", ["timerUUID": egg.uuid, "startedAt": 1])
        XCTAssertNotNil(try rename(tea.uuid, "Green tea", since: read), "only other rows changed since")

        let renamed = try XCTUnwrap(try c.call("org.seam.Store.Save", ["updates": [["entity": "Timer", "uuid": egg.uuid, "values": ["name": "Boiled egg"]]]])["sequence"]?.int64Value)
        XCTAssertThrowsError(try rename(egg.uuid, "Fried egg", since: renamed - 1)) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.Conflict", "\(e)")
            XCTAssertTrue("\(e)".contains("changed by save \(renamed)"), "\(e)")
        }
        XCTAssertEqual(try name(egg.uuid), "Boiled egg", "the refused save changed nothing")
        XCTAssertNotNil(try rename(egg.uuid, "Fried egg", since: renamed))

        // Deleting the group clears the timer's link: that change is the timer's too.
        let deleted = try XCTUnwrap(try c.call("org.seam.Store.Save", ["deletes": [["entity": "UserGroup", "uuid": group.uuid]]])["sequence"]?.int64Value)
        XCTAssertThrowsError(try rename(tea.uuid, "Black tea", since: deleted - 1)) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.Conflict", "\(e)")
        }
        XCTAssertEqual(try name(tea.uuid), "Green tea")

        let last = try XCTUnwrap(try c.call("org.seam.Store.Status")["sequence"]?.int64Value)
        XCTAssertThrowsError(try rename(tea.uuid, "Black tea", since: last + 1)) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.SequenceAhead", "\(e)")
        }
        for bad: JSON in ["7", -1, 1.5, ["n": 1]] {
            XCTAssertThrowsError(try c.call("org.seam.Store.Save", ["updates": [["entity": "Timer", "uuid": tea.uuid, "values": ["name": "x"]]],
                                                                   "unchangedSince": bad])) { e in
                XCTAssertEqual((e as? ClientError)?.remoteName, "org.varlink.service.InvalidParameter", "\(bad): \(e)")
            }
        }
        XCTAssertEqual(try name(tea.uuid), "Green tea")
    }

    /// `reply: "count"` answers with the number of changes in place of their list — on the quick
    /// path, the general one (a `null` member sends the call there) and a save in steps alike —
    /// counting a link rule's effects; any other reply is refused, naming it, and changes nothing.
    func testASaveMayAskForTheNumberOfItsChangesAlone() throws {
        let c = try client()
        try c.hello()
        func save(_ p: JSONObject) throws -> JSONObject { try c.call("org.seam.Store.Save", p) }
        let timers = (0..<3).map { _ in JSON.string(UUID().uuidString.lowercased()) }
        let quick = try save(["inserts": .array(timers.map { ["entity": "Timer", "values": ["uuid": $0, "name": "t"]] }), "reply": "count"])
        XCTAssertEqual(quick["changed"], 3)
        XCTAssertNil(quick["changes"], "no list when a count is asked for")
        XCTAssertNotNil(quick["sequence"]?.int64Value)
        _ = try save(["inserts": [["entity": "Session", "values": ["timerUUID": timers[0], "startedAt": 1]]]])
        // Through the general path: deleting a timer deletes its session too.
        let general = try save(["deletes": [["entity": "Timer", "uuid": timers[0]]], "reply": "count", "unchangedSince": .null])
        XCTAssertEqual(general["changed"], 2, "\(general)")
        XCTAssertNil(general["changes"])
        let none = try save(["deletes": [], "reply": "count"])
        XCTAssertEqual(none["changed"], 0)
        XCTAssertEqual(none["sequence"], .null)
        // A save in steps (more operations than one turn takes) answers the same way.
        let many = (0..<500).map { i -> JSON in ["entity": "Timer", "values": ["name": .string("bulk \(i)")]] }
        let stepped = try save(["inserts": .array(many), "reply": "count"])
        XCTAssertEqual(stepped["changed"], 500)
        XCTAssertNil(stepped["changes"])
        XCTAssertEqual(try save(["inserts": [["entity": "Timer", "values": ["name": "listed"]]]])["changes"]?.arrayValue?.count, 1,
                       "the list, as ever, when no reply is asked for")
        for bad: JSON in ["rows", "COUNT", 1, ["count"]] {
            XCTAssertThrowsError(try save(["inserts": [["entity": "Timer", "values": ["name": "refused"]]], "reply": bad])) { e in
                XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.InvalidRequest", "\(bad): \(e)")
                XCTAssertTrue("\(e)".contains("reply"), "\(e)")
            }
        }
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer", "predicate": "name == 'refused'"])["count"], 0)
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "Timer"])["count"], 503)
    }

    /// A field named twice is one field: each row is a JSON object with each key once, by
    /// query and by uuid.
    func testAFieldNamedTwiceIsSentOnce() throws {
        let c = try client()
        try c.hello()
        let uuid = try XCTUnwrap(try c.save([.insert(entity: "UserGroup", values: ["name": "Kitchen"])]).inserted.first)
        let rows = try c.fetch("UserGroup", fields: ["name", "name"])
        XCTAssertEqual(rows.first?["name"]?.stringValue, "Kitchen")
        XCTAssertEqual(rows.first?.count, 2, "uuid and name: \(rows)")
        let one = try c.call("org.seam.Store.Fetch", ["entity": "UserGroup", "uuid": .string(uuid), "fields": ["name", "name"]])
        XCTAssertEqual(one["rows"]?[0]?["name"]?.stringValue, "Kitchen")
    }

    /// Optional parameters as the interface types them: a null uuid is no uuid; an offset has no
    /// upper bound (rows past 100,000 are reached by paging); Count, which takes no limit or
    /// offset, ignores them as it ignores any parameter it does not know.
    func testFetchAndCountTakeTheirParametersAsTheInterfaceTypesThem() throws {
        let c = try client()
        try c.hello()
        try c.save([.insert(entity: "UserGroup", values: ["name": "Kitchen"])])
        let all = try c.call("org.seam.Store.Fetch", ["entity": "UserGroup", "uuid": .null])
        XCTAssertEqual(all["rows"]?.arrayValue?.count, 1)
        let past = try c.call("org.seam.Store.Fetch", ["entity": "UserGroup", "limit": 10, "offset": 1_000_000_000])
        XCTAssertEqual(past["rows"]?.arrayValue?.count, 0)
        XCTAssertThrowsError(try c.call("org.seam.Store.Fetch", ["entity": "UserGroup", "offset": -1]))
        XCTAssertEqual(try c.call("org.seam.Store.Count", ["entity": "UserGroup", "limit": -5, "offset": "x"])["count"]?.int64Value, 1)
    }

    /// A client that may write groups but not read timers deletes a group: the link rule clears
    /// the timers' groupUUID (the broker's doing), but the reply lists only what it may read.
    func testASaveReplyListsOnlyWhatTheCallerMayRead() throws {
        let owner = try client()
        try owner.hello()
        let group = try XCTUnwrap(try owner.save([.insert(entity: "UserGroup", values: ["name": "Kitchen"])]).inserted.first)
        try owner.save([.insert(entity: "Timer", values: ["name": "Tea", "groupUUID": .string(group)])])
        let narrow = try client()
        try narrow.call("org.seam.Store.Hello", ["version": 1, "role": "plugin", "name": "groups",
                                                 "capabilities": ["reads": [], "writes": ["UserGroup"]]])
        let reply = try narrow.call("org.seam.Store.Save", ["deletes": [["entity": "UserGroup", "uuid": .string(group)]]])
        XCTAssertEqual(reply["changes"]?.arrayValue?.compactMap { $0["entity"]?.stringValue }, ["UserGroup"], "\(reply)")
        XCTAssertEqual(try owner.fetch("Timer").first?["groupUUID"], .null, "the link rule still ran")
    }

    func testAPluginIsTheAuthorOfItsSaves() throws {
        let c = try client()
        XCTAssertEqual(try c.hello(role: "plugin", name: "notifier")["author"]?.stringValue, "plugin:notifier")
        XCTAssertThrowsError(try c.hello(role: "plugin")) { e in
            XCTAssertEqual((e as? ClientError)?.remoteName, "org.seam.Store.InvalidRequest")
        }
    }

    func testClientsFollowTheEnvironment() throws {
        setenv("SEAM_SOCKET", broker.socketPath, 1)
        defer { unsetenv("SEAM_SOCKET") }
        XCTAssertEqual(try SeamConnection.connect().call("org.varlink.service.GetInfo")["product"]?.stringValue, "seamd")
        let fd = try inheritable(at: 700)
        setenv("SEAM_FD", String(fd), 1)
        defer { unsetenv("SEAM_FD") }
        let inherited = try SeamConnection.connect()
        XCTAssertEqual(inherited.path, "fd \(fd)")
        XCTAssertEqual(try inherited.call("org.seam.Store.Status")["product"]?.stringValue, "seamd")
        XCTAssertNotEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0, "a command the process runs does not inherit it")
        // The inherited socket has one client; a second would take the first one's replies.
        XCTAssertEqual(try SeamConnection.connect().path, broker.socketPath)
        // A number that names no open descriptor is passed over: the socket path serves.
        setenv("SEAM_FD", "699", 1)
        XCTAssertEqual(try SeamConnection.connect().path, broker.socketPath)
    }

    /// A connection to the broker on a descriptor numbered `base` or above. A process's clients
    /// take `$SEAM_FD` once per number, so each test uses numbers of its own.
    private func inheritable(at base: Int32) throws -> Int32 {
        let fd = try RawClient.connectFD(broker.socketPath)
        defer { close(fd) }
        let high = fcntl(fd, F_DUPFD, base)
        guard high >= base else { throw XCTSkip("no descriptor at \(base) or above") }
        return high
    }

    /// `seam subscribe` and `seam watch` subscribe on the socket a plugin inherited, as every
    /// other client does; when it closes, the streams end (it cannot be opened again).
    func testASubscriberTakesTheInheritedSocket() async throws {
        let fd = try inheritable(at: 800)
        setenv("SEAM_FD", String(fd), 1)
        setenv("SEAM_SOCKET", "/nonexistent/seamd.sock", 1)
        defer { unsetenv("SEAM_FD"); unsetenv("SEAM_SOCKET") }
        let subscriber = try SeamSubscriber.connect(reconnectTimeout: 60)
        XCTAssertEqual(subscriber.path, "fd \(fd)")
        var updates = subscriber.subscribe(LiveQuery("UserGroup")).makeAsyncIterator()
        let first = try await updates.next()
        XCTAssertEqual(first?.kind, .result)
        XCTAssertThrowsError(try SeamSubscriber.connect(), "the second client does not share it") { e in
            XCTAssertTrue("\(e)".contains("/nonexistent/seamd.sock"), "\(e)")
        }
        shutdown(fd, Int32(SHUT_RDWR))
        do {
            _ = try await updates.next()
            XCTFail("the stream goes on after its inherited socket closed")
        } catch {
            XCTAssertEqual((error as? ClientError).map { "\($0.kind)" }, "disconnected", "\(error)")
        }
    }

    func testNoBrokerIsAClearError() {
        XCTAssertThrowsError(try SeamConnection.connect(path: "/tmp/nobody-listens-\(getpid())/seamd.sock")) { e in
            XCTAssertTrue("\(e)".contains("no seamd answers on /tmp/nobody-listens-"), "\(e)")
            XCTAssertTrue("\(e)".contains("start it"), "\(e)")
        }
    }
}
