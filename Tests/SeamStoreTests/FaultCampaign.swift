import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamStore
import SeamTestSupport
import XCTest

/// A seeded fault campaign over real processes (issue: nothing lost at rest): a client saves
/// timers and sessions through a real seamd (with its ticker supervised) — one row at a time, and
/// now and then 100 in one save, which seamd writes in steps — while the campaign
/// injects, at random, the faults a machine and its people inflict — SIGKILL of seamd or of the
/// ticker, SIGSTOP/SIGCONT, a full disk (a small tmpfs, as root), an I/O error on writes (the
/// LD_PRELOAD injector), a damaged page, a store file deleted or replaced while seamd serves, an
/// older copy put back while it is stopped — and after every step a checker asserts:
///
/// - every acknowledged save is there, or the store it went to is reported (damaged, closed with
///   a reason, or noted as put back from an older copy) — never served silently different;
/// - every open store passes `PRAGMA integrity_check`;
/// - a subscriber that resumes gets a gapless diff or a marked resync, and what it holds equals a
///   fresh fetch.
///
/// The seed is printed; the same seed takes the same steps.
final class FaultCampaign {
    /// What the campaign knows a row is: there with these values, gone, or one of several (a
    /// save whose reply was lost: it happened or it did not).
    enum Expected: Equatable {
        case present(String)
        case absent
        case either(String?, String?)  // name before, name after (nil: absent)
    }

    enum Fault: String, CaseIterable {
        case killSeamd, killTicker, stopAndContinue, diskFull, writeErrors, damagedPage, deletedFile, replacedFile,
             olderCopyWhileStopped, backup
    }

    let seed: UInt64
    var random: SplitMix64
    let tmp: TemporaryDirectory
    let mount: TmpfsMount?
    let data: String
    let config: String
    let armed: String
    var environment: [String: String]
    let durability: String
    var broker: BrokerProcess
    /// Entity → uuid → what it should be.
    var model: [String: [String: Expected]] = ["Timer": [:], "Session": [:]]
    /// The last backup set, and the model as it was then.
    var lastBackup: (directory: String, model: [String: [String: Expected]])?
    var subscriber: ResumingSubscriber?

    // What the campaign did, for its summary.
    var steps = 0
    var faults: [Fault: Int] = [:]
    var acknowledged = 0
    var checkedRows = 0
    var reportedStores = 0
    var trail: [String] = []

    init(seed: UInt64) throws {
        self.seed = seed
        random = SplitMix64(seed: seed)
        tmp = TemporaryDirectory("seam-campaign")
        if getuid() == 0, let fs = try? TmpfsMount(sizeKiB: 64 * 1024, label: "seam-campaign-fs") {
            mount = fs
            data = fs.path + "/data"
        } else {
            mount = nil
            data = tmp.file("data")
        }
        armed = tmp.file("armed")
        config = tmp.file("seamd.json")
        // Two generations of backups/ at most: the small disk is for the full-disk fault.
        try Data(#"{"roles":{"ticker":{"enabled":true},"migrate":{"enabled":false}},"backups":{"keep":2}}"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        environment = try FaultInjection.environment([:], armed: armed, in: tmp)
        var r = SplitMix64(seed: seed ^ 0xD0)
        durability = r.next() % 2 == 0 ? "normal" : "full"
        broker = try BrokerProcess(arguments: ["--config", config, "--durability", durability], dataDirectory: data, environment: environment)
    }

    deinit {
        broker.stop()
        mount?.unmount()
    }

    func note(_ s: String) { trail.append("step \(steps): \(s)") }
    func chance(_ n: UInt64) -> Bool { random.next() % n == 0 }
    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }

    var context: String { "seed \(seed) (replay with SEAM_CAMPAIGN_SEED=\(seed)), durability \(durability)\n" + trail.suffix(12).joined(separator: "\n") }

    // MARK: - Steps

    func run(steps count: Int) throws {
        try backup()  // something to restore from, from the start
        subscriber = try ResumingSubscriber(socket: broker.socketPath)
        for _ in 0..<count {
            steps += 1
            try saves(1 + Int(random.next() % 4))
            if chance(2) {
                let fault = pick(Fault.allCases.filter { $0 != .diskFull || mount != nil })
                faults[fault, default: 0] += 1
                note("fault \(fault.rawValue)")
                do { try inject(fault) } catch {
                    XCTFail("the fault \(fault.rawValue) could not be made (\(error)): \(context)")
                    throw error
                }
            }
            try heal()
            try check()
        }
    }

    /// A client's saves: new timers and sessions (their uuids chosen here, so that a save whose
    /// reply was lost can still be looked for), renames, deletes.
    func saves(_ n: Int) throws {
        guard let c = try? SeamConnection.connect(path: broker.socketPath) else { return }
        _ = try? c.hello()
        for _ in 0..<n {
            let entity = chance(2) ? "Timer" : "Session"
            // Now and then a big save, which seamd writes in steps (SteppedSaves).
            if chance(6) {
                guard bigSave(entity, on: c) else { return }
                continue
            }
            let existing = model[entity]!.filter { if case .present = $0.value { return true } else { return false } }.keys.sorted()
            let kind = existing.isEmpty ? 0 : random.next() % 4
            let uuid = kind == 0 ? UUIDText.random(using: &random) : pick(existing)
            let name = "n\(steps)-\(random.next() % 1000)"
            let before = model[entity]![uuid]
            let op: SeamConnection.Change
            let after: Expected
            switch kind {
            case 0, 1:
                var values: JSONObject = ["name": .string(name)]
                if entity == "Session" { values["startedAt"] = .integer(1_700_000_000) }  // no step end: the ticker leaves it
                if kind == 0 { values["uuid"] = .string(uuid) }
                op = kind == 0 ? .insert(entity: entity, values: values) : .update(entity: entity, uuid: uuid, values: values)
                after = .present(name)
            default:
                op = .delete(entity: entity, uuid: uuid)
                after = .absent
            }
            let refused: Bool
            do {
                _ = try c.save([op])
                model[entity]![uuid] = after
                acknowledged += 1
                continue
            } catch {
                if case .remote = error.kind { refused = true } else { refused = false }
            }
            if refused { continue }  // refused: nothing changed
            // No reply: it happened, or it did not.
            model[entity]![uuid] = .either(Self.name(before), Self.name(after))
            return
        }
    }

    /// 100 inserts of `entity` in one save; false when no reply came (the connection is done).
    func bigSave(_ entity: String, on c: SeamConnection) -> Bool {
        let name = "big\(steps)-\(random.next() % 1000)"
        let uuids = (0..<100).map { _ in UUIDText.random(using: &random) }
        let ops: [SeamConnection.Change] = uuids.map { uuid in
            var values: JSONObject = ["uuid": .string(uuid), "name": .string(name)]
            if entity == "Session" { values["startedAt"] = .integer(1_700_000_000) }
            return .insert(entity: entity, values: values)
        }
        do {
            _ = try c.save(ops)
            for uuid in uuids { model[entity]![uuid] = .present(name) }
            acknowledged += 1
            return true
        } catch {
            if case .remote = error.kind { return true }  // refused: nothing changed
            for uuid in uuids { model[entity]![uuid] = .either(nil, name) }
            return false
        }
    }

    static func name(_ e: Expected?) -> String? {
        switch e {
        case .present(let n)?: return n
        default: return nil
        }
    }

    // MARK: - Faults

    func inject(_ fault: Fault) throws {
        switch fault {
        case .killSeamd:
            kill(broker.process.processIdentifier, SIGKILL)
            try restart()
        case .killTicker:
            let c = try SeamConnection.connect(path: broker.socketPath)
            if let pid = try c.status()["roles"]?.arrayValue?.first(where: { $0["role"]?.stringValue == "ticker" })?["pid"]?.int64Value {
                kill(Int32(pid), SIGKILL)
            }
        case .stopAndContinue:
            kill(broker.process.processIdentifier, SIGSTOP)
            usleep(UInt32(50_000 + random.next() % 250_000))
            kill(broker.process.processIdentifier, SIGCONT)
        case .diskFull:
            guard let mount else { return }
            let ballast = mount.path + "/ballast"
            _ = try? Executables.runTool("/usr/bin/fallocate", ["-l", "\(mount.freeBytes)", ballast])
            try saves(3)  // refused, or taken: whatever the reply says
            try? FileManager.default.removeItem(atPath: ballast)
        case .writeErrors:
            let store = pick(["Cloud", "Local"])
            environment["SEAM_FAIL_PWRITE_SUFFIX"] = "/\(store).sqlite-wal"
            environment["SEAM_FAIL_FDATASYNC_SUFFIX"] = "/\(store).sqlite-wal"
            try restart(gracefully: true)  // with the injector told which file
            _ = FileManager.default.createFile(atPath: armed, contents: nil)
            try saves(3)
            try? FileManager.default.removeItem(atPath: armed)
            if !broker.process.isRunning { note("seamd stopped on a failed flush (exit 74), as it must"); try restart() }
        case .damagedPage:
            let store = pick(["Cloud", "Local"])
            try damagePage(data + "/\(store).sqlite")
            // What a person does on suspicion: `seam check`, which closes a store it finds damaged.
            if let c = try? SeamConnection.connect(path: broker.socketPath) {
                _ = try? c.hello()
                _ = try? c.call("org.seam.Maintenance.Check")
            }
        case .deletedFile:
            try? FileManager.default.removeItem(atPath: data + "/\(pick(["Cloud", "Local"])).sqlite")
        case .replacedFile:
            guard let set = lastBackup else { return }
            let store = pick(["Cloud", "Local"])
            // Copied beside the store first, so that the move over it is one rename.
            let older = data + "/older-\(steps).sqlite"
            try FileManager.default.copyItem(atPath: set.directory + "/\(store).sqlite", toPath: older)
            let said = { self.broker.log.components(separatedBy: "was replaced by another file").count }
            let before = said()
            XCTAssertEqual(rename(older, data + "/\(store).sqlite"), 0, "\(errno)")
            // seamd puts its data back within a moment (until then the path is not its store,
            // and is not read here: it would be read with seamd's WAL beside it), the older file
            // moved aside; a person then removes that.
            let deadline = Date().addingTimeInterval(5)
            while said() == before && Date() < deadline { usleep(20_000) }
            XCTAssertGreaterThan(said(), before, "a replaced \(store) file is put back and logged: \(context)")
            for name in (try? FileManager.default.contentsOfDirectory(atPath: data)) ?? [] where name.contains(".replaced-") {
                try? FileManager.default.removeItem(atPath: data + "/" + name)
            }
        case .olderCopyWhileStopped:
            guard let set = lastBackup else { return }
            let store = pick(["Cloud", "Local"])
            broker.stop()  // a clean stop, as a person stops seamd to put a file back
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: data + "/\(store).sqlite" + suffix) }
            try FileManager.default.copyItem(atPath: set.directory + "/\(store).sqlite", toPath: data + "/\(store).sqlite")
            // Older than what seamd served only if a save reached the store since the set was taken.
            let changed = entities(of: store).contains { model[$0] != set.model[$0] }
            for entity in entities(of: store) { model[entity] = set.model[entity] }
            try restart(alreadyStopped: true)
            let status = try SeamConnection.connect(path: broker.socketPath).status()
            let noted = status["stores"]?.arrayValue?.first { $0["name"]?.stringValue == store }?["note"]?.stringValue
            if changed { XCTAssertNotNil(noted, "an older copy put back is said, not served silently: \(context)") }
            if noted != nil { reportedStores += 1 }
        case .backup:
            try backup()
        }
    }

    func entities(of store: String) -> [String] { store == "Cloud" ? ["Timer"] : ["Session"] }

    /// Garbage over one page SQLite will notice (a page type byte no page has), in the middle of
    /// the file.
    func damagePage(_ path: String) throws {
        guard let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size >= 4 * 4096 else { return }
        let page = 1 + Int(random.next() % UInt64(size / 4096 - 1))
        var garbage = (0..<4096).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        garbage[0] = 0xFF
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(page * 4096))
        try handle.write(contentsOf: garbage)
        try handle.close()
    }

    func backup() throws {
        let directory = tmp.file("set-\(steps)")
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        do {
            let reply = try c.call("org.seam.Maintenance.Backup", ["directory": .string(directory)])
            let held = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for store in ["Cloud", "Local"] {
                XCTAssertTrue(held.contains("\(store).sqlite"), "a set said taken (\(reply)) holds \(store).sqlite, not only \(held): \(context)")
            }
            // Rows whose save's outcome is not known yet are as unknown in the set.
            lastBackup = (directory, model)
        } catch {
            note("backup refused: \(error)")  // a store closed: none is taken
        }
    }

    func restart(gracefully: Bool = false, alreadyStopped: Bool = false) throws {
        if gracefully, !alreadyStopped { broker.stop() }
        broker.process.waitUntilExit()
        broker = try BrokerProcess(arguments: ["--config", config, "--durability", durability], dataDirectory: data, environment: environment)
        try subscriber?.reconnect(broker.socketPath)
    }

    /// After a fault: a store reported damaged is put back from the last backup set (what a
    /// person would do), and the model becomes the set's.
    func heal() throws {
        if !broker.process.isRunning { try restart() }
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let stores = try c.status()["stores"]?.arrayValue ?? []
        let broken = stores.filter { ["damaged", "closed"].contains($0["state"]?.stringValue) }
        guard !broken.isEmpty, let set = lastBackup else { return }
        for s in broken {
            XCTAssertFalse((s["reason"]?.stringValue ?? "").isEmpty, "a damaged store says why: \(context)")
            reportedStores += 1
        }
        note("restoring \(set.directory)")
        _ = try c.call("org.seam.Maintenance.Restore", ["directory": .string(set.directory)])
        model = set.model
    }

    // MARK: - The checker

    func check() throws {
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        let stores = try c.status()["stores"]?.arrayValue ?? []
        for store in ["Cloud", "Local"] {
            let s = stores.first { $0["name"]?.stringValue == store }
            let state = s?["state"]?.stringValue ?? "?"
            guard state == "open" || state == "checking" else {
                XCTAssertFalse((s?["reason"]?.stringValue ?? "").isEmpty, "\(store) is \(state) without a reason: \(context)")
                reportedStores += 1
                continue
            }
            // Every open store passes integrity_check (read here, beside seamd). A file removed
            // a moment ago is put back within a second or two (never created here: an empty file
            // at the path would itself be a file replaced).
            let path = data + "/\(store).sqlite"
            let deadline = Date().addingTimeInterval(5)
            while !FileManager.default.fileExists(atPath: path) && Date() < deadline { usleep(20_000) }
            XCTAssertTrue(FileManager.default.fileExists(atPath: path), "\(store)'s file was not put back: \(context)")
            var o = Database.Options()
            o.readOnly = true
            o.create = false
            let db = try Database(path: path, options: o)
            XCTAssertEqual(try db.check(quick: false), [], "\(store) fails integrity_check while open: \(context)")
            db.close()
            for entity in entities(of: store) { try checkRows(entity, c) }
        }
        try subscriber?.check(c, context: context)
    }

    /// Every row of `entity` as the model says, and no row it does not know; a row whose save's
    /// outcome was unknown takes what it is now.
    func checkRows(_ entity: String, _ c: SeamConnection) throws {
        var fetched: JSONObject?
        var failure: ClientError?
        do { fetched = try c.call("org.seam.Store.Fetch", ["entity": .string(entity), "fields": ["uuid", "name"]]) } catch { failure = error }
        if let failure {
            // Closed while this looked (its file could not be put back, say): said, with why.
            XCTAssertEqual(failure.remoteName, "org.seam.Store.StoreUnavailable", "\(failure): \(context)")
            XCTAssertTrue("\(failure)".contains("not available: "), "\(failure): \(context)")
            reportedStores += 1
            return
        }
        let rows = fetched?["rows"]?.arrayValue ?? []
        var found: [String: String] = [:]
        for r in rows { if let u = r["uuid"]?.stringValue { found[u] = r["name"]?.stringValue ?? "" } }
        for (uuid, expected) in model[entity]! {
            checkedRows += 1
            switch expected {
            case .present(let name):
                XCTAssertEqual(found[uuid], name, "\(entity) \(uuid): an acknowledged save is not there as saved: \(context)")
            case .absent:
                XCTAssertNil(found[uuid], "\(entity) \(uuid): an acknowledged delete came back: \(context)")
            case .either(let a, let b):
                XCTAssertTrue(found[uuid] == a || found[uuid] == b, "\(entity) \(uuid): \(found[uuid] ?? "absent") is neither "
                              + "\(a ?? "absent") nor \(b ?? "absent"): \(context)")
                model[entity]![uuid] = found[uuid].map(Expected.present) ?? .absent
            }
        }
        for uuid in found.keys where model[entity]![uuid] == nil {
            XCTFail("\(entity) \(uuid) is there, and no save made it: \(context)")
        }
    }

    var summary: String {
        "seed \(seed) (\(durability)): \(steps) steps, faults \(faults.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")); "
            + "\(acknowledged) acknowledged saves, \(checkedRows) row checks, \(reportedStores) store reports, "
            + "\(subscriber?.resumes ?? 0) resumes (\(subscriber?.resyncs ?? 0) marked resync)"
    }
}

/// A subscriber to every Session that resumes after each restart from the last sequence it
/// holds: what it holds must always equal a fresh fetch, and a resume must be a gapless diff or
/// a marked resync.
final class ResumingSubscriber {
    var client: RawClient
    var live = LiveResult()
    var resumes = 0
    var resyncs = 0

    static let query: JSONObject = ["entity": "Session", "sort": "uuid", "fields": ["name"]]

    init(socket: String) throws {
        client = try RawClient(socket)
        subscribe(since: nil)
    }

    func subscribe(since: Int64?) {
        var p = Self.query
        if let since { p["since"] = .integer(since) }
        client.send(String(decoding: JSON.object(["method": "org.seam.Store.Subscribe", "parameters": .object(p), "more": true]).encoded(),
                           as: UTF8.self))
    }

    func reconnect(_ socket: String) throws {
        client = try RawClient(socket)
        resumes += 1
        subscribe(since: live.sequence)
    }

    /// Takes every update waiting, then compares with a fresh fetch.
    func check(_ c: SeamConnection, context: String) throws {
        while let frame = client.readFrame(timeout: 0.05) {
            let reply = try Reply(try JSON.decode(Array(frame.utf8), limits: Limits.replyJSON))
            if let error = reply.error {
                // A resume from beyond the stores (a store put back older), or its store closed:
                // said, and subscribed afresh.
                XCTAssertTrue(["org.seam.Store.SequenceAhead", "org.seam.Store.StoreUnavailable", "org.seam.Store.ShuttingDown"].contains(error),
                              "\(error): \(context)")
                live = LiveResult()
                subscribe(since: nil)
                return
            }
            let update = try SubscriptionUpdate(reply.parameters)
            if update.kind == .resync { resyncs += 1 }
            if update.kind == .end { return }
            do { try live.apply(update) } catch {
                XCTFail("a diff did not fit what the subscriber held (\(error)): \(context)")
                live = LiveResult()
                subscribe(since: nil)
                return
            }
        }
        guard live.sequence != nil else { return }
        let fresh = try c.call("org.seam.Store.Fetch", Self.query)
        guard fresh["sequence"]?.int64Value == live.sequence else { return }  // a save since: compared next time
        let rows = fresh["rows"]?.arrayValue?.compactMap(\.objectValue) ?? []
        XCTAssertEqual(live.rows, rows, "what the subscriber holds differs from a fresh fetch: \(context)")
    }
}
