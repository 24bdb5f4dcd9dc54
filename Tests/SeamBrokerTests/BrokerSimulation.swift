import Foundation
import SeamClient
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem
import SeamTestSupport
@testable import SeamBroker

/// A seeded simulation of clients against the broker in this process (`EmbeddedBroker`, on a
/// manual clock): writers save (one change or twenty, one call or three pipelined, now and then
/// hanging up with calls in flight), a person starts, pauses, skips and stops timers through
/// org.seam.Timers, subscribers follow queries (some stop reading for a while,
/// some reconnect and resume), hostile clients send mangled frames or nothing at all, the clock
/// jumps, the broker restarts. After every step the broker is turned until it rests, and checked:
///
/// - every subscriber that reads holds what a fresh fetch of its query returns;
/// - every acknowledged save is in the stores (a save whose reply was lost may or may not be);
/// - every connection is where it may rest (`Broker.restingProblems`): no output queued that
///   nobody will write, no calls waiting for nothing, no outbox past its bound, no silent client
///   past the handshake timeout;
/// - every frame the broker sends is a reply a client can read;
/// - every session the timer service made is where a session may be (state, dates, position).
///
/// The outbox limits and the kernel's send buffers are made small, so that a subscriber which
/// stops reading falls behind, resyncs, or is closed within a few saves. The same seed takes the
/// same steps; a failure names its seed and the steps before it.
final class BrokerSimulation {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// What the simulation knows of a row.
    enum Expected: Equatable {
        case present(entity: String, name: String)
        case absent(entity: String)
    }

    final class Writer {
        let connection: SeamConnection
        /// Its rows (no other writer touches them), as its saves sent so far leave them.
        var rows: [String: (entity: String, name: String)] = [:]
        init(_ connection: SeamConnection) { self.connection = connection }
    }

    final class Subscriber {
        let query: JSONObject
        var client: RawClient?
        var connection = 0
        var callID: Int64 = 0
        var live = LiveResult()
        /// Whether it reads what the broker sends (a slow one does not, for a while).
        var reading = true
        /// The broker's sequence, its own and its connection when it last equalled a fetch.
        var checked = ""
        init(query: JSONObject) { self.query = query }
    }

    let seed: UInt64
    var random: SplitMix64
    let clock = ManualClock()
    private(set) var broker: EmbeddedBroker
    /// Brokers restarted away from, kept while their clients finish with them.
    private var retired: [EmbeddedBroker] = []
    private var checker: SeamConnection
    private var writers: [Writer] = []
    /// A person's `seam`: timers started, paused, skipped and stopped through org.seam.Timers.
    private var timekeeper: SeamConnection?
    private var timers: [String] = []
    private var sessions: [String] = []
    private var subscribers: [Subscriber] = []
    /// Clients that connected and said nothing, or sent garbage: they must be closed in time.
    private var idle: [RawClient] = []
    /// uuid → what it should be; rows a lost reply left uncertain are not here.
    private var model: [String: Expected] = [:]
    private var nextCallID: Int64 = 0
    private var step = 0
    private var trail: [String] = []
    private(set) var counts: [String: Int] = [:]
    var times: [String: Double] = [:]

    static let sendBufferBytes = 4096
    static let queries: [JSONObject] = [
        ["entity": "UserGroup", "sort": "name"],
        ["entity": "UserGroup", "predicate": "name BEGINSWITH $p", "parameters": ["p": "a"], "sort": "-name", "limit": 4],
        ["entity": "Session", "sort": "name", "fields": ["name", "state"]],
        ["entity": "Session", "predicate": "state == $s", "parameters": ["s": "running"], "sort": "stepIndex", "limit": 6],
        ["entity": "Session", "predicate": "stepIndex > 2", "sort": "-stepIndex,name"],
    ]

    init(seed: UInt64) throws {
        self.seed = seed
        random = SplitMix64(seed: seed)
        let durable = seed % 8 == 0
        broker = try EmbeddedBroker(clock: clock) { configuration in
            var limits = BrokerLimits.OutboxLimits()
            limits.pauseCallsBytes = 8 << 10
            limits.subscriberBacklogBytes = 8 << 10
            limits.maxOutboxBytes = 96 << 10
            limits.maxWaitingCallBytes = 64 << 10
            configuration.supervision.limits.outbox = limits
            if durable { configuration.durability = .full }
            configuration.shutdownGrace = 0.02  // subscribers that stop reading would hold every restart up
        }
        checker = try broker.client()  // Hello at once: a client that says nothing is closed in time
        checker.replyTimeout = 10
    }

    // MARK: - Running

    func run(steps: Int) throws {
        for _ in 0..<steps {
            step += 1
            let t0 = WallClock.monotonic()
            try takeStep()
            let t1 = WallClock.monotonic()
            try settle()
            let t2 = WallClock.monotonic()
            try check()
            let t3 = WallClock.monotonic()
            let kind = trail.last.map { String($0.split(separator: " ")[1]) } ?? "?"
            times["step." + kind, default: 0] += t1 - t0
            times["settle", default: 0] += t2 - t1
            times["check", default: 0] += t3 - t2
        }
    }

    private func note(_ what: String) {
        trail.append("\(step): \(what)")
        if trail.count > 40 { trail.removeFirst() }
        counts[what.prefix { $0 != " " }.description, default: 0] += 1
    }

    func fail(_ what: String) -> Failure {
        Failure(description: "seed \(seed), step \(step): \(what)\nthe steps before it:\n  " + trail.joined(separator: "\n  ")
                + "\nreplay it with SEAM_SIMULATION_SEED=\(seed)")
    }

    private func chance(_ percent: Int) -> Bool { Int(random.next() % 100) < percent }
    private func below(_ n: Int) -> Int { Int(random.next() % UInt64(max(1, n))) }

    private func takeStep() throws {
        let roll = below(100)
        switch roll {
        case 0..<8: try keepTime()
        case 8..<40: try save()
        case 40..<48: try subscribe()
        case 48..<53: dropSubscriber()
        case 53..<61: toggleReading()
        case 61..<65: try resume()
        case 65..<68: try hangUpWriter()
        case 68..<76: try sendBadFrame()
        case 76..<79: try connectSilently()
        case 79..<86: advanceClock()
        case 86..<89: try halfClose()
        case 89..<91: try refusedSave()
        case 91..<93: try bigSave()
        case 93..<94: try restart()
        case 94..<95 where chance(30): try endlessFrame()
        default: try keepTime()
        }
    }

    // MARK: - Writers

    private func writer() throws -> Writer {
        if writers.isEmpty || (writers.count < 4 && chance(10)) {
            let c = try broker.client()
            c.replyTimeout = 10
            writers.append(Writer(c))
        }
        return writers[below(writers.count)]
    }

    private func name() -> String {
        let letters = ["a", "b", "c", "d"]
        let base = letters[below(4)] + String(below(1000))
        // Now and then a long one, so that a subscriber that does not read fills its outbox.
        return chance(8) ? base + String(repeating: "x", count: 300 + below(700)) : base
    }

    private func insertValues(_ entity: String, name: String) -> JSONObject {
        guard entity == "Session" else { return ["name": .string(name)] }
        return ["name": .string(name), "state": .string(["running", "paused"][below(2)]),  // never finished: the timekeeper's Clear would take it
                "stepIndex": .integer(Int64(below(6))), "startedAt": .integer(1_700_000_000 + Int64(below(1000)))]
    }

    /// One save's parameters, and what it does to the rows, from what `w`'s earlier saves left.
    private func changes(for w: Writer, count: Int) -> (JSONObject, [(uuid: String, after: Expected)]) {
        var inserts: [JSON] = [], updates: [JSON] = [], deletes: [JSON] = []
        var effects: [(uuid: String, after: Expected)] = []
        for _ in 0..<count {
            let existing = Array(w.rows.keys).sorted()
            let kind = existing.isEmpty || w.rows.count < 3 ? 0 : (w.rows.count > 30 ? 1 + below(2) : below(3))
            if kind == 0 {
                let entity = chance(50) ? "UserGroup" : "Session"
                let uuid = UUIDText.random(using: &random)
                let n = name()
                var values = insertValues(entity, name: n)
                values["uuid"] = .string(uuid)
                inserts.append(["entity": .string(entity), "values": .object(values)])
                w.rows[uuid] = (entity, n)
                effects.append((uuid, .present(entity: entity, name: n)))
            } else {
                let uuid = existing[below(existing.count)]
                guard let row = w.rows[uuid] else { continue }
                if kind == 1 {
                    let n = name()
                    var values: JSONObject = ["name": .string(n)]
                    if row.entity == "Session", chance(50) { values["stepIndex"] = .integer(Int64(below(6))) }
                    if row.entity == "Session", chance(30) { values["state"] = .string(["running", "paused"][below(2)]) }
                    updates.append(["entity": .string(row.entity), "uuid": .string(uuid), "values": .object(values)])
                    w.rows[uuid] = (row.entity, n)
                    effects.append((uuid, .present(entity: row.entity, name: n)))
                } else {
                    deletes.append(["entity": .string(row.entity), "uuid": .string(uuid)])
                    w.rows[uuid] = nil
                    effects.append((uuid, .absent(entity: row.entity)))
                }
            }
        }
        var p = JSONObject()
        if !inserts.isEmpty { p["inserts"] = .array(inserts) }
        if !updates.isEmpty { p["updates"] = .array(updates) }
        if !deletes.isEmpty { p["deletes"] = .array(deletes) }
        return (p, effects)
    }

    /// One to three saves, pipelined, then their replies.
    private func save(count: Int? = nil) throws {
        let w = try writer()
        var sent: [(JSON, [(uuid: String, after: Expected)])] = []
        for _ in 0..<(1 + (chance(25) ? below(3) : 0)) {
            let (p, effects) = changes(for: w, count: count ?? (1 + (chance(20) ? below(20) : 0)))
            guard !p.isEmpty else { continue }
            sent.append((try w.connection.begin("org.seam.Store.Save", p), effects))
        }
        note("save \(sent.count) call(s), \(sent.map(\.1.count)) changes")
        for (id, effects) in sent {
            do {
                try w.connection.finish(id)
            } catch {
                throw fail("a save was refused: \(error)")
            }
            for e in effects { model[e.uuid] = e.after }
            counts["acknowledged", default: 0] += 1
        }
    }

    /// A save of a few hundred changes (the broker writes it in steps past a size).
    private func bigSave() throws {
        note("bigSave")
        try save(count: 100 + below(300))
    }

    /// A writer sends saves and hangs up before their replies: each happened or did not.
    private func hangUpWriter() throws {
        guard !writers.isEmpty else { return try save() }
        let i = below(writers.count)
        let w = writers.remove(at: i)
        var uncertain: Set<String> = []
        for _ in 0..<below(3) {
            let (p, effects) = changes(for: w, count: 1 + below(5))
            _ = try? w.connection.begin("org.seam.Store.Save", p)
            uncertain.formUnion(effects.map(\.uuid))
        }
        note("hangUp writer with \(uncertain.count) uncertain row(s)")
        for u in uncertain { model[u] = nil }
        // Its connection closes as the writer goes (`SeamConnection`'s deinit).
    }

    /// A client without Hello may not save: refused, and nothing changes.
    private func refusedSave() throws {
        note("refusedSave")
        let c = try broker.client(hello: false)
        c.replyTimeout = 10
        do {
            try c.save([.insert(entity: "UserGroup", values: ["name": "never"])])
            throw fail("a client that did not say Hello saved")
        } catch let e as ClientError where e.remoteName != nil {
            counts["refused", default: 0] += 1
        }
    }

    // MARK: - Subscribers

    private func connect(_ s: Subscriber) throws {
        let (client, connection) = try broker.rawConnection(sendBufferBytes: Self.sendBufferBytes)
        s.client = client
        s.connection = connection
        nextCallID += 1
        s.callID = nextCallID
        var p = s.query
        if let since = s.live.sequence { p["since"] = .integer(since) }
        client.send(Call(method: "org.seam.Store.Subscribe", parameters: p, more: true, id: .integer(s.callID)).frame())
    }

    private func subscribe() throws {
        guard subscribers.count < 6 else { return toggleReading() }
        let s = Subscriber(query: Self.queries[below(Self.queries.count)])
        try connect(s)
        subscribers.append(s)
        note("subscribe \(s.query["entity"]?.stringValue ?? "") on connection \(s.connection)")
    }

    private func dropSubscriber() {
        guard !subscribers.isEmpty else { return }
        let s = subscribers.remove(at: below(subscribers.count))
        note("dropSubscriber connection \(s.connection)")
    }

    private func toggleReading() {
        guard !subscribers.isEmpty else { return }
        let s = subscribers[below(subscribers.count)]
        s.reading.toggle()
        note("\(s.reading ? "reads" : "stopsReading") connection \(s.connection)")
    }

    /// A subscriber drops its connection and subscribes again from what it holds.
    private func resume() throws {
        guard let s = subscribers.randomElement(using: &random) else { return try subscribe() }
        note("resume connection \(s.connection) from \(s.live.sequence.map(String.init) ?? "nothing")")
        s.client = nil
        s.reading = true
        try connect(s)
    }

    /// Takes what has arrived for `s`; true when anything did.
    private func drain(_ s: Subscriber) throws -> Bool {
        guard let client = s.client else { return false }
        let (frames, closed) = client.availableFrames()
        for bytes in frames {
            let reply = try parseReply(bytes, from: "subscriber on connection \(s.connection)")
            if reply.error == "org.seam.Store.ShuttingDown" { continue }
            if let error = reply.error { throw fail("subscriber on connection \(s.connection) got \(error): \(reply.parameters)") }
            guard reply.id == .integer(s.callID) else { throw fail("a reply for call \(String(describing: reply.id)) on connection \(s.connection)") }
            let update: SubscriptionUpdate
            do { update = try SubscriptionUpdate(reply.parameters) } catch { throw fail("an update that does not parse: \(error)") }
            do { try s.live.apply(update) } catch { throw fail("connection \(s.connection): \(error)") }
            counts["update." + update.kind.rawValue, default: 0] += 1
        }
        if closed {
            // Closed by the broker (it read too slowly, or the broker restarted): it resumes.
            counts["reconnected", default: 0] += 1
            try connect(s)
        }
        return !frames.isEmpty || closed
    }

    private func parseReply(_ bytes: [UInt8], from whom: String) throws -> Reply {
        do { return try Reply(try JSON.decode(bytes, limits: Limits.replyJSON)) } catch {
            throw fail("\(whom) got a frame that is no reply (\(error)): \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
    }

    // MARK: - Timers

    /// A person's timer commands, as the clock jumps around them: refused only as the service
    /// says it refuses (a session in the wrong state, a timer already running).
    private func keepTime() throws {
        if timekeeper == nil {
            let c = try broker.client()
            c.replyTimeout = 10
            timekeeper = c
        }
        guard let c = timekeeper else { return }
        if timers.isEmpty || chance(5) {
            let steps: JSON = .array((0..<(1 + below(3))).map { i in ["label": .string("s\(i)"), "seconds": .integer(Int64(1 + below(20)))] })
            let values: JSONObject = ["name": .string("t\(below(100))"), "steps": steps, "repeatCount": .integer(Int64(1 + below(3)))]
            timers += (try? c.save([.insert(entity: "Timer", values: values)]).inserted) ?? []
        }
        let method = ["Start", "Flash", "Pause", "Resume", "Skip", "Reset", "Stop", "Advance", "AdvanceMany", "Clear"][below(10)]
        var p: JSONObject = [:]
        switch method {
        case "Start": p["timer"] = .string(timers[below(timers.count)])
        case "Flash": p["seconds"] = .integer(Int64(1 + below(30)))
        case "AdvanceMany": p["sessions"] = .array(sessions.map(JSON.string))
        case "Clear": break
        default:
            guard !sessions.isEmpty else { return }
            p["session"] = .string(sessions[below(sessions.count)])
        }
        note("timer \(method)")
        do {
            let reply = try c.call("org.seam.Timers.\(method)", p)
            if let s = reply["session"]?.stringValue, !sessions.contains(s) { sessions.append(s) }
            if method == "Clear" { counts["timer.cleared", default: 0] += Int(reply["deleted"]?.int64Value ?? 0) }
        } catch let e where ["org.seam.Timers.WrongState", "org.seam.Timers.AlreadyRunning", "org.seam.Timers.NotFound"]
            .contains(e.remoteName ?? "") {
            counts["timer.refused", default: 0] += 1
        } catch {
            throw fail("org.seam.Timers.\(method) \(p) failed: \(error)")
        }
    }

    /// Every session the timekeeper made is where a session may be: running with a step end and
    /// no pause, paused with both, finished with its end; its step and round within its steps.
    private func checkSessions() throws {
        guard !sessions.isEmpty else { return }
        let rows: [JSONObject]
        let mine = Set(sessions)
        do { rows = try checker.fetch("Session").filter { mine.contains($0["uuid"]?.stringValue ?? "") } } catch {
            throw fail("a fetch of the sessions failed: \(error)")
        }
        let present = Set(rows.compactMap { $0["uuid"]?.stringValue })
        sessions.removeAll { !present.contains($0) }  // cleared (Clear, or Start replacing a finished run)
        for r in rows {
            let state = r["state"]?.stringValue ?? "?"
            let steps = (r["steps"]?.arrayValue ?? []).count
            let index = r["stepIndex"]?.int64Value ?? -1, round = r["round"]?.int64Value ?? -1
            let rounds = r["repeatCount"]?.int64Value ?? 1
            let set = { (key: String) in r[key].map { !$0.isNull } ?? false }
            let fits: Bool
            switch state {
            case "running": fits = set("stepEndsAt") && !set("pausedAt") && !set("finishedAt")
            case "paused": fits = set("stepEndsAt") && set("pausedAt") && !set("finishedAt")
            case "finished": fits = set("finishedAt")
            default: fits = false
            }
            let position = state == "finished" || ((0..<Int64(steps)).contains(index) && (0..<rounds).contains(round))
            guard fits, position else { throw fail("session \(r["uuid"]?.stringValue ?? "?") is out of place: \(r)") }
        }
    }

    // MARK: - Hostile clients and time

    private func sendBadFrame() throws {
        let raw = try broker.raw()
        let frame = BadFrames.make(&random)
        note("badFrame \(frame.kind)")
        raw.send(frame.bytes)
        for bytes in raw.availableFrames().frames { _ = try parseReply(bytes, from: "a client that sent \(frame.kind)") }
        if chance(50) { idle.append(raw) }
    }

    /// A client that made a call, then sends a frame that never ends: closed once it passes the
    /// frame limit, whatever it said before.
    private func endlessFrame() throws {
        note("endlessFrame")
        let raw = try broker.raw()
        raw.send(Call(method: "org.seam.Store.Hello", parameters: ["version": 1, "role": "cli"], id: 1).frame())
        raw.send([UInt8](repeating: UInt8(ascii: " "), count: Limits.maxFrameBytes + 1))
        guard raw.isClosed(timeout: 5) else { throw fail("a client past the frame limit without a NUL was not closed") }
    }

    private func connectSilently() throws {
        note("silent client")
        idle.append(try broker.raw())
    }

    private func halfClose() throws {
        note("halfClose")
        let raw = try broker.raw()
        raw.send(Call(method: "org.seam.Store.Count", parameters: ["entity": "UserGroup"], id: 1).frame())
        raw.shutdownWriting()
        guard let reply = raw.readFrameBytes(timeout: 5) else { throw fail("a half-closed client got no reply") }
        _ = try parseReply(reply, from: "a half-closed client")
        guard raw.isClosed(timeout: 5) else { throw fail("a half-closed client, answered, was not closed") }
    }

    private func advanceClock() {
        let seconds = Double(below(12_000)) / 1000
        note("clock +\(seconds) s")
        clock.advance(seconds)
        if chance(20) { clock.setNow(clock.now - Double(below(3600))) }  // the wall clock set back
        idle.removeAll { $0.isClosed(timeout: 0) }
    }

    private func restart() throws {
        note("restart")
        let old = broker
        broker = try old.restarted()
        retired.append(old)
        // Every writer's calls were answered (each step finishes them): their connections end.
        writers.removeAll()
        timekeeper = nil
        idle.removeAll()
        checker = try broker.client()
        checker.replyTimeout = 10
    }

    // MARK: - Resting and checking

    /// Turns the broker until it rests and every reading subscriber has taken what was sent.
    private func settle() throws {
        let connections = { [unowned self] in broker.broker.connections.values }
        for _ in 0..<5000 {
            broker.turn(maxWait: 0)
            var took = false
            for s in subscribers where s.reading { took = try drain(s) || took }
            let unread = subscribers.contains { s in
                s.reading && connections().contains { $0.id == s.connection && $0.pendingOutput > 0 }
            }
            if !took, !unread, broker.broker.isResting { return }
            if !broker.broker.offLoop.isEmpty || broker.broker.steps.running != nil { broker.turn(maxWait: 0.001) }
        }
        throw fail("the broker did not come to rest: \(broker.broker.restingProblems())")
    }

    private func check() throws {
        let problems = broker.broker.restingProblems()
        if !problems.isEmpty { throw fail("connections not where they may rest:\n" + problems.joined(separator: "\n")) }
        // A subscriber is compared with a fetch when anything was saved since it last was, or
        // it holds another result since (each query fetched once a step).
        let sequence = broker.broker.context.sequence
        var fetched: [String: [JSONObject]] = [:]
        for s in subscribers where s.reading && s.live.sequence != nil {
            let state = "\(sequence) \(s.live.sequence ?? -1) \(s.connection)"
            guard state != s.checked else { continue }
            var p = s.query
            p["since"] = nil
            let key = JSON.object(p).description
            let rows: [JSONObject]
            if let known = fetched[key] {
                rows = known
            } else {
                counts["fetches", default: 0] += 1
                do { rows = (try checker.call("org.seam.Store.Fetch", p)["rows"]?.arrayValue ?? []).compactMap(\.objectValue) } catch {
                    throw fail("a fetch failed: \(error)")
                }
                fetched[key] = rows
            }
            guard rows == s.live.rows else {
                throw fail("the subscriber on connection \(s.connection) holds \(s.live.rows.map { $0["uuid"]?.stringValue ?? "?" }), "
                           + "a fetch of \(p) returns \(rows.map { $0["uuid"]?.stringValue ?? "?" })")
            }
            s.checked = state
        }
        let tm = WallClock.monotonic()
        if step % 10 == 0 || step < 20 { try checkModel() }
        // After what can move a session: a timer command, the clock, a restart.
        if let last = trail.last, ["timer", "clock", "restart"].contains(where: { last.contains(": \($0)") }) { try checkSessions() }
        times["checkModel", default: 0] += WallClock.monotonic() - tm
    }

    /// Every acknowledged save is there.
    func checkModel() throws {
        for entity in ["UserGroup", "Session"] {
            let rows: [JSONObject]
            do { rows = try checker.fetch(entity) } catch { throw fail("a fetch of \(entity) failed: \(error)") }
            var names: [String: String] = [:]
            for r in rows { if let u = r["uuid"]?.stringValue { names[u] = r["name"]?.stringValue ?? "" } }
            for (uuid, expected) in model {
                switch expected {
                case .present(entity, let name) where names[uuid] != name:
                    throw fail("\(entity) \(uuid) was saved as \(name.prefix(20)) and acknowledged; the store has \(names[uuid].map { String($0.prefix(20)) } ?? "nothing")")
                case .absent(entity) where names[uuid] != nil:
                    throw fail("\(entity) \(uuid) was deleted and acknowledged; the store still has it")
                default: break
                }
            }
        }
    }

    var summary: String {
        "seed \(seed): " + times.sorted { $0.value > $1.value }.prefix(6).map { "\($0.key) \(Int($0.value * 1000)) ms" }.joined(separator: ", ") + " | " + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}

/// Frames a broken or hostile client sends: a valid call, then damaged.
enum BadFrames {
    static func make(_ random: inout SplitMix64) -> (kind: String, bytes: [UInt8]) {
        let uuid = UUIDText.random(using: &random)
        let valid: [String] = [
            #"{"method":"org.seam.Store.Save","parameters":{"inserts":[{"entity":"UserGroup","values":{"uuid":"\#(uuid)","name":"z"}}]},"id":7}"#,
            #"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","predicate":"stepIndex > $n","parameters":{"n":1},"sort":"name"},"id":"f"}"#,
            #"{"method":"org.seam.Store.Subscribe","parameters":{"entity":"UserGroup","sort":"name"},"more":true,"id":3}"#,
            #"{"method":"org.seam.Store.Hello","parameters":{"version":1,"role":"plugin","capabilities":{"read":["UserGroup"]}},"id":1}"#,
            #"{"method":"org.seam.Store.Save","parameters":{"deletes":[{"entity":"Session","uuid":"\#(uuid)"}]},"id":8}"#,
        ]
        var bytes = Array(valid[Int(random.next() % UInt64(valid.count))].utf8)
        func at() -> Int { Int(random.next() % UInt64(bytes.count)) }
        let kind: String
        switch random.next() % 9 {
        case 0:
            kind = "truncated"
            bytes = Array(bytes[..<at()])
        case 1:
            kind = "byteChanged"
            bytes[at()] = UInt8(truncatingIfNeeded: random.next())
        case 2:
            kind = "bytesInserted"
            bytes.insert(contentsOf: (0..<(1 + random.next() % 8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at())
        case 3:
            kind = "hugeNumber"
            bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "1", with: "1e999").utf8)
        case 4:
            kind = "deepNesting"
            bytes = Array((String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).utf8)
        case 5:
            kind = "invalidUTF8"
            bytes.insert(contentsOf: [0xff, 0xc3], at: at())
        case 6:
            kind = "nulInside"
            bytes.insert(0, at: at())
        case 7:
            kind = "wrongTypes"
            bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\"parameters\":{", with: "\"parameters\":[{")
                .utf8)
        default:
            kind = "duplicateKeys"
            bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "{\"method\"", with: "{\"id\":1,\"id\":2,\"method\"")
                .utf8)
        }
        return (kind, bytes + [0])
    }
}
