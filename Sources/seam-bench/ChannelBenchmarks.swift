import Foundation
import SeamJSON
import SeamSchema
import SeamProtocol
import SeamSystem

/// Benchmarks of query channels (issue: subscriptions): commit-to-subscriber latency beside
/// PostgreSQL's NOTIFY/LISTEN at equal durability, matching cost as channels grow, fan-out, and
/// seamd's memory with 10,000 channels. Everything is measured in the same run.
enum ChannelBenchmarks {
    static let latencyRounds = 2_000
    static let matchingRounds = 2_000
    static let fanOutRounds = 50

    static func run() throws {
        let work = try Harness.scratchDirectory("channels")
        if getuid() == 0 { _ = try? Process.run(URL(fileURLWithPath: "/bin/chmod"), arguments: ["755", work]).waitUntilExit() }
        defer { try? FileManager.default.removeItem(atPath: work) }

        var latency = BenchTable("Commit to subscriber: one client saves one row, another hears it; 10,000 channels, one matches",
                                 columns: ["durability", "seamd p50", "seamd p99", "PostgreSQL NOTIFY p50", "PostgreSQL p99", "p50 seamd / PG",
                                           "floor p50", "floor / PG"])
        var rss = 0
        for sync in [true, false] {
            // Both run at once and take turns, 100 rounds each, so that the machine's moods fall
            // on both alike.
            let seamd = try SeamdLatency(work: work + "/latency-\(sync)", sync: sync)
            defer { seamd.stop() }
            if sync { rss = seamd.memory }
            let postgres = try? PostgresLatency(work: work, sync: sync)
            defer { postgres?.stop() }
            let relay = try RelayLatency(work: work + "/relay-\(sync)", sync: sync)
            defer { relay.stop() }
            // Each system in the same placement as the others: where the scheduler puts them (a
            // lottery on this machine: a wakeup across CPUs costs ~50 µs, within one ~5 µs), then
            // pinned, everything on one CPU, and the client on one CPU with every server on the other.
            let servers = [seamd.process.processIdentifier, relay.process.processIdentifier] + (postgres?.server.processes ?? [])
            for (k, placement) in CPUPlacement.available.enumerated() {
                try placement.apply(client: true, servers: servers)
                var seam: [Double] = [], pg: [Double] = [], floor: [Double] = []
                for block in 0..<(latencyRounds / 100) {
                    seam += try seamd.measure(rounds: 100, from: k * latencyRounds + block * 100)  // later rows sort first: each is a diff
                    if let postgres { pg += try postgres.measure(rounds: 100, from: block * 100) }
                    floor += try relay.measure(rounds: 100)
                }
                func p(_ xs: [Double], _ q: Double) -> String { xs.isEmpty ? "n/a" : Harness.duration(Harness.percentile(xs, q)) }
                latency.add([(sync ? "synced (seamd --durability full; PG fsync, synchronous_commit on)"
                                   : "not synced (seamd --durability normal; PG synchronous_commit off)") + ", \(placement.label)",
                             p(seam, 0.5), p(seam, 0.99), p(pg, 0.5), p(pg, 0.99),
                             pg.isEmpty ? "n/a" : Harness.ratio(Harness.median(seam), Harness.median(pg)),
                             p(floor, 0.5), pg.isEmpty ? "n/a" : Harness.ratio(Harness.median(floor), Harness.median(pg))])
            }
            try CPUPlacement.scheduler.apply(client: true, servers: servers)
        }
        latency.print()
        print("targets: p50 ≤ 0.75× PostgreSQL's (synced); p99 ≤ 1 ms")
        print("(floor: the least any broker does here, measured beside them — a process that reads a save, writes four pages to a")
        print(" log it overwrites, fdatasyncs it when synced, and sends one frame to the subscriber and one to the saver; no database.")
        print(" Placed by the scheduler: wherever the kernel runs each process; one CPU: the client and every server (seamd, every")
        print(" PostgreSQL process, the floor) on CPU 0; two CPUs: the client on CPU 0, every server on CPU 1)")

        let pinned = CPUPlacement.available.contains(.oneCPU)
        var matching = BenchTable("Matching cost per committed row as channels grow (one-row save that matches none; save round trip p50"
                                      + (pinned ? "; the client and every seamd on one CPU)" : ")"),
                                  columns: ["channels", "save p50", "matching cost (p50 − no channels)", "save p50 / no channels"])
        // Four brokers at once, taking turns 100 saves at a time: the machine's noise falls on all.
        // All on one CPU with the client: placed by the scheduler, a broker whose wakeups cross
        // CPUs pays ~50 µs a round trip that another does not, which swamped what is measured
        // (the 100,000-channel broker came out 0.83× and 1.36× of none in runs of one day).
        let counts = [0, 100, 10_000, 100_000]
        let brokers = try counts.map { n in try SaveCost(work: work + "/matching-\(n)", channels: n) }
        defer { brokers.forEach { $0.stop() } }
        let placement: CPUPlacement = pinned ? .oneCPU : .scheduler
        try placement.apply(client: true, servers: brokers.map(\.process.processIdentifier))
        defer { try? CPUPlacement.scheduler.apply(client: true, servers: []) }
        var samples = [[Double]](repeating: [], count: counts.count)
        for block in 0..<(matchingRounds / 100) {
            for (k, b) in brokers.enumerated() { samples[k] += try b.measure(rounds: 100, from: block * 100) }
        }
        let base = Harness.median(samples[0])
        for (k, n) in counts.enumerated() {
            let p50 = Harness.median(samples[k])
            matching.add([n == 0 ? "none" : n.formatted(), Harness.duration(p50), n == 0 ? "-" : Harness.duration(p50 - base),
                          Harness.ratio(p50, base)])
        }
        matching.print()
        print("target: flat (the channel index finds the channels a row can match; the rest cost nothing)")

        var fan = BenchTable("Fan-out: one commit heard by 1,000 subscriptions (10 channels) on 100 connections",
                             columns: ["measure", "p50", "p99"])
        let times = try fanOut(work: work + "/fanout")
        fan.add(["save to the last subscriber hearing it", Harness.duration(Harness.percentile(times, 0.5)),
                 Harness.duration(Harness.percentile(times, 0.99))])
        fan.add(["seamd RSS with 10,000 channels", String(format: "%.1f MB", Double(rss) / 1_048_576), "target ≤ 100 MB"])
        fan.print()
    }

    // MARK: - seamd

    static func startSeamd(_ dir: String, sync: Bool) throws -> (Process, String) {
        let socket = dir + "/s.sock"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let p = try BrokerBenchmarks.start(Executables.sibling("seamd"),
                                           ["--data-dir", dir + "/data", "--socket", socket, "--no-roles", "--durability", sync ? "full" : "normal"])
        try BrokerBenchmarks.waitForSocket(socket)
        return (p, socket)
    }

    /// Registers `count` channels `name == "c<i>"` (none matches a saved row) on connections of
    /// at most 10,000 subscriptions each; returns the connections (they must stay open).
    static func registerChannels(_ count: Int, socket: String) throws -> [RawSeam] {
        var connections: [RawSeam] = []
        var left = count
        var i = 0
        while left > 0 {
            let c = try RawSeam(socket)
            let n = min(left, 10_000)
            var batch: [UInt8] = []
            for k in 0..<n {
                batch += RawSeam.frame("org.seam.Store.Subscribe", ["entity": "Session", "predicate": .string("name == \"c\(i)\""), "fields": ["name"]],
                                       more: true, id: Int64(k))
                i += 1
            }
            try UnixSocket.writeAll(c.fd, batch)
            for _ in 0..<n {
                let r = try c.reply()
                if let e = r.error { throw BenchError("Subscribe failed: \(e) \(r.parameters)") }
            }
            connections.append(c)
            left -= n
        }
        return connections
    }

    /// seamd with 9,999 channels that a save does not match and one that it does.
    final class SeamdLatency {
        let process: Process
        let others: [RawSeam]
        let subscriber: RawSeam
        let saver: RawSeam
        let memory: Int

        init(work: String, sync: Bool) throws {
            let (process, socket) = try startSeamd(work, sync: sync)
            self.process = process
            others = try registerChannels(9_999, socket: socket)
            subscriber = try RawSeam(socket)
            _ = try subscriber.call("org.seam.Store.Subscribe", ["entity": "Session", "predicate": "name == \"target\"",
                                                                  "sort": "-startedAt", "limit": 1], more: true)
            saver = try RawSeam(socket)
            _ = try saver.call("org.seam.Store.Hello", ["version": 1])
            memory = Int(try saver.call("org.seam.Store.Status").parameters["rss"]?.int64Value ?? 0)
        }

        func stop() { BrokerBenchmarks.stop(process) }

        func measure(rounds: Int, from first: Int) throws -> [Double] {
            try ChannelBenchmarks.timeSaves(saver: saver, subscriber: subscriber, rounds: rounds, from: first)
        }
    }

    /// Seconds from `saver` sending each save to `subscriber` reading its diff; the saves' start
    /// times count up from `first`, so that each is the newest (and the diff of a `-startedAt`,
    /// `limit` 1 channel).
    static func timeSaves(saver: RawSeam, subscriber: RawSeam, rounds: Int, from first: Int) throws -> [Double] {
        var times: [Double] = []
        for i in first..<(first + rounds) {
            let frame = RawSeam.frame("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": "target", "startedAt": .integer(Int64(1_700_000_000 + i)),
            ]]]], id: Int64(i))
            let t = Harness.now()
            try UnixSocket.writeAll(saver.fd, frame)
            let heard = try subscriber.reply()
            times.append(Double(Harness.now() - t) / 1e9)
            guard heard.parameters["kind"]?.stringValue == "diff" else { throw BenchError("expected a diff: \(heard.parameters)") }
            _ = try saver.reply()
        }
        return times
    }

    /// seamd with `channels` channels that no saved row matches, and a client that saves.
    final class SaveCost {
        let process: Process
        let held: [RawSeam]
        let saver: RawSeam

        init(work: String, channels: Int) throws {
            let (process, socket) = try startSeamd(work, sync: false)
            self.process = process
            held = try registerChannels(channels, socket: socket)
            saver = try RawSeam(socket)
            _ = try saver.call("org.seam.Store.Hello", ["version": 1])
        }

        func stop() { BrokerBenchmarks.stop(process) }

        /// Round trips of one-row saves.
        func measure(rounds: Int, from first: Int) throws -> [Double] {
            var times: [Double] = []
            for i in first..<(first + rounds) {
                let frame = RawSeam.frame("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                    "name": .string("x\(i)"), "startedAt": .integer(Int64(i)),
                ]]]], id: Int64(i))
                let t = Harness.now()
                try UnixSocket.writeAll(saver.fd, frame)
                _ = try saver.reply()
                times.append(Double(Harness.now() - t) / 1e9)
            }
            return times
        }
    }

    static func fanOut(work: String) throws -> [Double] {
        let (process, socket) = try startSeamd(work, sync: false)
        defer { BrokerBenchmarks.stop(process) }
        let sorts = ["name", "-name", "startedAt", "-startedAt", "stepIndex", "-stepIndex", "state", "-state", "uuid", "-uuid"]
        var listeners: [RawSeam] = []
        for _ in 0..<100 {
            let c = try RawSeam(socket)
            for (k, sort) in sorts.enumerated() {
                _ = try c.call("org.seam.Store.Subscribe", ["entity": "Session", "predicate": "name == \"fan\"", "sort": .string(sort)],
                               more: true, id: Int64(k))
            }
            listeners.append(c)
        }
        let saver = try RawSeam(socket)
        _ = try saver.call("org.seam.Store.Hello", ["version": 1])
        var times: [Double] = []
        for i in 0..<fanOutRounds {
            let frame = RawSeam.frame("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": "fan", "startedAt": .integer(Int64(i)),
            ]]]], id: 1_000_000 + Int64(i))
            let t = Harness.now()
            try UnixSocket.writeAll(saver.fd, frame)
            var pending = Dictionary(uniqueKeysWithValues: listeners.map { ($0.fd, 10) })
            var fds = listeners.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let byFD = Dictionary(uniqueKeysWithValues: listeners.map { ($0.fd, $0) })
            while !pending.isEmpty {
                guard poll(&fds, nfds_t(fds.count), 5000) > 0 else { throw BenchError("fan-out: a subscriber heard nothing in 5 s") }
                for p in fds where p.revents != 0 {
                    let c = byFD[p.fd]!
                    pending[p.fd, default: 0] -= try c.fillCountingFrames()
                    if pending[p.fd] == 0 { pending[p.fd] = nil }
                }
            }
            times.append(Double(Harness.now() - t) / 1e9)
            _ = try saver.reply()
        }
        return times
    }

    // MARK: - The floor

    /// What the cheapest broker would do for one save heard by one subscriber, with seamd's I/O:
    /// read the save, write four WAL-sized frames (a 24-byte header and a 4 KB page each, as one
    /// Session insert writes) to a log that is overwritten as seamd's WAL is once it has started
    /// over, fdatasync it when `synced`, then send the subscriber one frame and the saver another.
    /// No parsing, no database. Run as `seam-bench __relay SOCKET LOG synced|unsynced`.
    static func relay(socket: String, log path: String, synced: Bool) throws {
        let listener = try UnixSocket.listen(path: socket)
        UnixSocket.setNonBlocking(listener, false)
        let log = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard log >= 0 else { throw BenchError("cannot open \(path)") }
        let size = 8 << 20
        let zeros = [UInt8](repeating: 0, count: 1 << 16)
        for offset in stride(from: 0, to: size, by: zeros.count) { _ = pwrite(log, zeros, zeros.count, off_t(offset)) }
        fsync(log)
        var buffers: [Int32: [UInt8]] = [:]
        func frame(_ fd: Int32) -> [UInt8]? {  // the next NUL-ended frame, or nil at EOF
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                if let nul = buffers[fd, default: []].firstIndex(of: 0) {
                    let f = Array(buffers[fd]![..<nul])
                    buffers[fd]!.removeFirst(nul + 1)
                    return f
                }
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { return nil }
                buffers[fd, default: []] += chunk[0..<n]
            }
        }
        let reply = Array(#"{"parameters":{}}"#.utf8) + [0]
        let diff = Array(#"{"parameters":{"kind":"diff"}}"#.utf8) + [0]
        var subscriber: Int32 = -1, saver: Int32 = -1
        while subscriber < 0 || saver < 0 {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { continue }
            guard let first = frame(fd) else { close(fd); continue }  // a probe: connected, sent nothing
            if String(decoding: first, as: UTF8.self).contains("Subscribe") { subscriber = fd } else { saver = fd }
            try UnixSocket.writeAll(fd, reply)
        }
        let header = [UInt8](repeating: 1, count: 24), page = [UInt8](repeating: 2, count: 4096)
        var offset = 32
        while frame(saver) != nil {
            for _ in 0..<4 {
                _ = pwrite(log, header, header.count, off_t(offset))
                _ = pwrite(log, page, page.count, off_t(offset + header.count))
                offset += header.count + page.count
            }
            if offset > size - 5 * 4120 { offset = 32 }
            if synced { fdatasync(log) }
            try UnixSocket.writeAll(subscriber, diff)
            try UnixSocket.writeAll(saver, reply)
        }
    }

    /// The floor beside seamd and PostgreSQL: `relay` in a process of its own.
    final class RelayLatency {
        let process: Process
        let subscriber: RawSeam
        let saver: RawSeam

        init(work: String, sync: Bool) throws {
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            let socket = work + "/relay.sock"
            process = try BrokerBenchmarks.start(Executables.sibling("seam-bench"),
                                                 ["__relay", socket, work + "/log", sync ? "synced" : "unsynced"])
            try BrokerBenchmarks.waitForSocket(socket)
            subscriber = try RawSeam(socket)
            _ = try subscriber.call("org.seam.Store.Subscribe")
            saver = try RawSeam(socket)
            _ = try saver.call("org.seam.Store.Hello")
        }

        func stop() { BrokerBenchmarks.stop(process) }

        func measure(rounds: Int) throws -> [Double] {
            try ChannelBenchmarks.timeSaves(saver: saver, subscriber: subscriber, rounds: rounds, from: 0)
        }
    }

    // MARK: - PostgreSQL

    /// PostgreSQL with a table shaped like Session, one connection inserting with NOTIFY in the
    /// same transaction, one LISTENing.
    final class PostgresLatency {
        let server: PostgresServer
        let writer: PostgresConnection
        let listener: PostgresConnection

        init(work: String, sync: Bool) throws {
            server = try PostgresServer(work: work, fsync: sync)
            writer = try PostgresConnection(server.connectionString)
            listener = try PostgresConnection(server.connectionString)
            // The shape of seamd's Session table, its indexes included, so both insert the same row.
            try writer.execute("""
                CREATE TABLE session (uuid text PRIMARY KEY, timer_uuid text, state text NOT NULL DEFAULT 'running',
                  started_at double precision NOT NULL, step_ends_at double precision, step_index bigint NOT NULL DEFAULT 0,
                  name text NOT NULL DEFAULT '', icon text NOT NULL DEFAULT 'clock', colour text NOT NULL DEFAULT 'blue',
                  steps text NOT NULL DEFAULT '[]', repeat_count bigint NOT NULL DEFAULT 1, paused_at double precision,
                  round bigint NOT NULL DEFAULT 0, finished_at double precision);
                CREATE UNIQUE INDEX session_unique_timer_uuid ON session (timer_uuid);
                CREATE INDEX session_idx_state ON session (state)
                """)
            try listener.execute("LISTEN seam")
        }

        func stop() { server.stop() }

        /// Seconds from sending each insert-and-NOTIFY to the listener receiving it.
        func measure(rounds: Int, from first: Int) throws -> [Double] {
            var times: [Double] = []
            for i in first..<(first + rounds) {
                let uuid = UUIDText.random()
                let sql = "BEGIN; INSERT INTO session (uuid, name, started_at) VALUES ('\(uuid)', 'target', \(1_700_000_000 + i)); "
                    + "NOTIFY seam, '\(uuid)'; COMMIT"
                let t = Harness.now()
                try writer.sendQuery(sql)
                let payload = try listener.nextNotification()
                times.append(Double(Harness.now() - t) / 1e9)
                guard payload == uuid else { throw BenchError("PostgreSQL notified \(payload), expected \(uuid)") }
                try writer.finishQuery()
            }
            return times
        }
    }
}

/// A bare seamd connection for the benchmarks: frames made by hand, replies read whole.
final class RawSeam {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0

    init(_ path: String) throws { fd = try UnixSocket.connect(path: path) }
    deinit { close(fd) }

    static func frame(_ method: String, _ parameters: JSONObject = [:], more: Bool = false, id: Int64? = nil) -> [UInt8] {
        Call(method: method, parameters: parameters, more: more, id: id.map(JSON.integer)).frame()
    }

    /// Sends a call and reads its first reply.
    func call(_ method: String, _ parameters: JSONObject = [:], more: Bool = false, id: Int64 = 0) throws -> Reply {
        try UnixSocket.writeAll(fd, Self.frame(method, parameters, more: more, id: id))
        let r = try reply()
        if let e = r.error { throw BenchError("\(method): \(e) \(r.parameters)") }
        return r
    }

    /// The next reply, reading as needed (blocking).
    func reply() throws -> Reply {
        while true {
            if let r = try bufferedReply() { return r }
            try fill()
        }
    }

    /// A reply already read, if a whole one is buffered.
    func bufferedReply() throws -> Reply? {
        guard let nul = buffer[start...].firstIndex(of: 0) else { return nil }
        let frame = buffer[start..<nul]
        start = nul + 1
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return try Reply(try JSON.decode(frame))
    }

    /// Reads what the socket holds and drops it, answering how many frames ended in it (the
    /// fan-out reader counts arrivals without decoding them).
    func fillCountingFrames() throws -> Int {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = read(fd, &chunk, chunk.count)
        guard n > 0 else { throw BenchError("seamd closed the connection") }
        return chunk[0..<n].reduce(0) { $0 + ($1 == 0 ? 1 : 0) }
    }

    /// Reads what the socket holds (blocking until something arrives).
    func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = read(fd, &chunk, chunk.count)
        guard n > 0 else { throw BenchError("seamd closed the connection") }
        buffer += chunk[0..<n]
    }
}
