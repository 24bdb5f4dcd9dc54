import Foundation
import SeamJSON
import SeamSchema
import SeamProtocol
import SeamSystem

/// Benchmarks of query channels (issue: subscriptions): commit-to-subscriber latency beside
/// PostgreSQL's NOTIFY/LISTEN at equal durability, matching cost as channels grow, fan-out, and
/// seamd's memory with 10,000 channels. Everything is measured in the same run.
enum ChannelBenchmarks {
    static var latencyRounds: Int { Bench.size(2_400, quick: 600) }
    static var matchingRounds: Int { Bench.size(2_000, quick: 500) }
    static var fanOutRounds: Int { Bench.size(500, quick: 150) }
    static let fanOutWarmUp = 100
    /// Untimed rounds before any system is measured: seamd's first 4,000 WAL frames (about 1,000
    /// one-row saves, see `Checkpointer`) are appends, each fdatasync of which costs more than an
    /// overwrite's, where PostgreSQL's first WAL segment was written out whole by initdb; after
    /// these, seamd's WAL has started over, and every system has its caches and files as they stay.
    static let warmUpRounds = 1_500
    /// Every order of seamd (0), PostgreSQL (1), the floor (2) and SQLite alone (3), one a
    /// block of 100 rounds in turn (24 orders, 24 blocks): whatever one leaves behind (seamd's
    /// checkpointer, PostgreSQL's WAL writer) falls on each of the others, as often as on any.
    static let orders = permutations([0, 1, 2, 3])

    /// Every order of `xs`.
    static func permutations(_ xs: [Int]) -> [[Int]] {
        xs.count <= 1 ? [xs] : xs.indices.flatMap { i in permutations(xs.enumerated().filter { $0.offset != i }.map(\.element)).map { [xs[i]] + $0 } }
    }

    static func run() throws {
        let work = try Harness.scratchDirectory("channels")
        if getuid() == 0 { _ = try? Process.run(URL(fileURLWithPath: "/bin/chmod"), arguments: ["755", work]).waitUntilExit() }
        defer { try? FileManager.default.removeItem(atPath: work) }
        try latency(work: work)
        try matching(work: work)
        try fanOut(work: work)
    }

    /// Commit-to-subscriber latency of seamd, PostgreSQL and the floor at both durabilities, and
    /// the memory of the seamds measured, which hold 10,000 channels.
    static func latency(work: String) throws {
        var latency = BenchTable("Commit to subscriber: one client saves one row, another hears it; 10,000 channels, one matches; "
                                     + "\(latencyRounds.formatted()) rounds each after \(warmUpRounds.formatted()) untimed",
                                 columns: ["durability, placement", "seamd p50", "seamd p99", "PostgreSQL NOTIFY p50", "PostgreSQL p99",
                                           "p50 seamd / PG", "floor p50", "floor p99", "floor p50 / PG", "SQLite alone p50", "SQLite alone / PG",
                                           "p50 seamd / (floor + SQLite alone)"])
        var memory = BenchTable("seamd memory with 10,000 channels (target: RSS ≤ 100 MB)",
                                columns: ["seamd", "RSS, channels registered (empty store)", "RSS after the latency rounds", "peak RSS (VmHWM)"])
        var settings: [String] = []
        var worstToPG = 0.0, worstToParts = 0.0, worstP99 = 0.0, largestRSS = 0
        for synced in [true, false] {
            let seamd = try SeamdLatency(work: work + "/latency-\(synced)", sync: synced)
            defer { seamd.stop() }
            let registered = Harness.memory(of: seamd.process.processIdentifier).resident
            let postgres: PostgresLatency?
            do { postgres = try PostgresLatency(work: work, sync: synced) } catch {
                print("(PostgreSQL \(synced ? "synced" : "not synced") did not start, its columns are n/a: \(error))")
                postgres = nil
            }
            defer { postgres?.stop() }
            if let postgres { settings.append("\(synced ? "synced" : "not synced"): \(postgres.settings)") }
            let relay = try RelayLatency(work: work + "/relay-\(synced)", sync: synced)
            defer { relay.stop() }
            let alone = try SQLiteAlone(work: work + "/sqlite-\(synced)", sync: synced)
            let turns: [() throws -> [Double]] = [
                { try seamd.measure(rounds: 100) }, { try postgres?.measure(rounds: 100) ?? [] }, { try relay.measure(rounds: 100) },
                { try alone.measure(rounds: 100) },
            ]
            for _ in 0..<(warmUpRounds / 100) { for turn in turns { _ = try turn() } }
            // What setting up and warming up left in the page cache is written back now, not
            // during some system's turn.
            sync()
            // Each system in the same placement as the others: where the scheduler puts them (a
            // lottery on this machine: a wakeup across CPUs costs ~50 µs, within one ~5 µs), then
            // pinned, everything on one CPU, and the client on one CPU with every server on the other.
            let servers = [seamd.process.processIdentifier, relay.process.processIdentifier] + (postgres?.server.processes ?? [])
            for placement in CPUPlacement.available {
                try placement.apply(client: true, servers: servers)
                var samples = [[Double]](repeating: [], count: turns.count)
                for block in 0..<(latencyRounds / 100) {
                    for system in orders[block % orders.count] { samples[system] += try turns[system]() }
                }
                let (seam, pg, floor, sqlite) = (samples[0], samples[1], samples[2], samples[3])
                worstToPG = max(worstToPG, pg.isEmpty ? .nan : Harness.median(seam) / Harness.median(pg))
                worstP99 = max(worstP99, Harness.percentile(seam, 0.99))
                // seamd's own parts: its messages and I/O (the floor) and SQLite's work (alone).
                let parts = Harness.median(floor) + Harness.median(sqlite)
                worstToParts = max(worstToParts, Harness.median(seam) / parts)
                func p(_ xs: [Double], _ q: Double) -> String { xs.isEmpty ? "n/a" : Harness.duration(Harness.percentile(xs, q)) }
                func toPG(_ xs: [Double]) -> String { pg.isEmpty ? "n/a" : Harness.ratio(Harness.median(xs), Harness.median(pg)) }
                latency.add([(synced ? "synced (seamd --durability full; PG fsync=on, synchronous_commit=on)"
                                     : "not synced, WAL written at commit (seamd --durability normal; PG fsync=off, synchronous_commit=on)")
                                 + ", \(placement.label)",
                             p(seam, 0.5), p(seam, 0.99), p(pg, 0.5), p(pg, 0.99), toPG(seam), p(floor, 0.5), p(floor, 0.99), toPG(floor),
                             p(sqlite, 0.5), toPG(sqlite), Harness.ratio(Harness.median(seam), parts)])
            }
            try CPUPlacement.scheduler.apply(client: true, servers: servers)
            let after = Harness.memory(of: seamd.process.processIdentifier)
            largestRSS = max(largestRSS, after.peak)
            func mb(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
            memory.add(["--durability \(synced ? "full" : "normal"), \(seamd.saves.formatted()) one-row saves", mb(registered),
                        mb(after.resident), mb(after.peak)])
        }
        latency.print()
        print("targets, for every row (each durability, each placement): seamd p50 ≤ 1.0× PostgreSQL's and ≤ 1.3× (floor + SQLite")
        print(" alone); seamd p99 ≤ 1 ms")
        Figures.record("channels.p50_vs_postgres_worst_row", worstToPG)
        Figures.record("channels.p99_worst_row", worstP99)
        Figures.record("channels.p50_vs_floor_and_sqlite_worst_row", worstToParts)
        Figures.record("channels.peak_rss_10000_channels", Double(largestRSS))
        print("(seamd and the floor: timed from sending the save until the subscriber holds the whole diff frame (its final NUL);")
        print(" the frame is decoded, and its sequence checked to be the save's, after the timer. PostgreSQL: one prepared statement")
        print(" in autocommit (one transaction) that inserts the row and notifies — WITH i AS (INSERT … RETURNING uuid)")
        print(" SELECT pg_notify('seam', uuid) FROM i — timed from sending it until libpq on a second, LISTENing connection has")
        print(" parsed the notification. PostgreSQL's settings, as it reports them:\(settings.isEmpty ? " -" : "")")
        for s in settings { print("   \(s)") }
        print(" Each system warmed up first with \(warmUpRounds.formatted()) untimed rounds (seamd's WAL has started over), then sync();")
        print(" then blocks of 100 rounds, the four taking turns in each of their 24 orders in turn.")
        print(" The floor: seamd's own I/O and messages with no database work — a process that reads a save, writes the four 4 KB pages")
        print(" (each behind a 24-byte header) that one Session insert adds to seamd's WAL to a pre-allocated log it overwrites,")
        print(" fdatasyncs it when synced, and sends one frame to the subscriber and one to the saver.")
        print(" SQLite alone: the statements of one seamd save (BEGIN IMMEDIATE, the Session INSERT, the sequence's upsert, COMMIT) on")
        print(" the same schema, synchronous=FULL (synced) or NORMAL, through SQLite's C API in the bench's process: no messages, no")
        print(" channels. seamd commits each save to SQLite and sends what the floor sends, so their sum is a bound under its p50.")
        print(" seamd polls \(SeamdSpin.described) after a turn with work before it sleeps (--spin, from SEAM_SPIN_MICROSECONDS in the")
        print(" bench's environment, else seamd's default of 200 µs; 0 to compare without); PostgreSQL and the floor sleep at once.")
        print(" Placed by the scheduler: wherever the kernel runs each process; one CPU: the client and every server (seamd, every")
        print(" PostgreSQL process, the floor) on CPU 0; two CPUs: the client on CPU 0, every server on CPU 1)")
        memory.print()
    }

    /// The round trip of a one-row save that matches no channel, on seamds holding from none to
    /// 100,000 channels.
    static func matching(work: String) throws {
        let pinned = CPUPlacement.available.contains(.oneCPU)
        var matching = BenchTable("Matching cost per committed row as channels grow (channels `name == \"c<i>\"`: equality on name, "
                                      + "which the channel index files by value; one-row saves that match none, seamd --durability normal; "
                                      + "save round trip p50" + (pinned ? "; the client and every seamd on one CPU)" : ")"),
                                  columns: ["channels", "save p50", "matching cost (p50 − no channels)", "save p50 / no channels"])
        // Four brokers at once, taking turns 100 saves at a time: the machine's noise falls on all.
        // All on one CPU with the client: placed by the scheduler, a broker whose wakeups cross
        // CPUs pays ~50 µs a round trip that another does not, which swamped what is measured
        // (the 100,000-channel broker came out 0.83× and 1.36× of none in runs of one day).
        let counts = [0, 100, 10_000, 100_000]
        let brokers = try counts.map { n in try SaveCost(work: work + "/matching-\(n)", channels: n) }
        defer { brokers.forEach { $0.stop() } }
        for b in brokers { _ = try b.measure(rounds: warmUpRounds) }
        sync()
        let placement: CPUPlacement = pinned ? .oneCPU : .scheduler
        try placement.apply(client: true, servers: brokers.map(\.process.processIdentifier))
        defer { try? CPUPlacement.scheduler.apply(client: true, servers: []) }
        var samples = [[Double]](repeating: [], count: counts.count)
        for _ in 0..<(matchingRounds / 100) {
            for (k, b) in brokers.enumerated() { samples[k] += try b.measure(rounds: 100) }
        }
        let base = Harness.median(samples[0])
        for (k, n) in counts.enumerated() {
            let p50 = Harness.median(samples[k])
            matching.add([n == 0 ? "none" : n.formatted(), Harness.duration(p50), n == 0 ? "-" : Harness.duration(p50 - base),
                          Harness.ratio(p50, base)])
        }
        matching.print()
        Figures.record("channels.matching_100000_vs_none", Harness.median(samples[counts.count - 1]) / base)
        print("target: flat (the channel index finds the channels a row can match; the rest cost nothing)")
    }

    /// Not a benchmark: a steady load to profile seamd under (`seam-bench __profile SECONDS
    /// [synced]`, then `perf record -g -p PID` or `strace -c -f -p PID` on the pid it prints).
    /// The latency benchmark's seamd, 10,000 channels, saves back to back from one client, the
    /// client and seamd on one CPU where there are two; prints the p50 at the end.
    static func profile(seconds: Double, synced: Bool) throws {
        let work = try Harness.scratchDirectory("profile")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let seamd = try SeamdLatency(work: work, sync: synced)
        defer { seamd.stop() }
        if CPUPlacement.available.contains(.oneCPU) {
            try CPUPlacement.oneCPU.apply(client: true, servers: [seamd.process.processIdentifier])
        }
        _ = try seamd.measure(rounds: warmUpRounds)
        print("seamd pid \(seamd.process.processIdentifier), \(synced ? "--durability full" : "--durability normal"), "
              + "saving for \(seconds) s")
        var times: [Double] = []
        let end = Harness.now() + UInt64(seconds * 1e9)
        while Harness.now() < end { times += try seamd.measure(rounds: 100) }
        print("commit to subscriber p50 \(Harness.duration(Harness.median(times))), p99 \(Harness.duration(Harness.percentile(times, 0.99))) "
              + "over \(times.count.formatted()) saves")
    }

    // MARK: - seamd

    static func startSeamd(_ dir: String, data: String? = nil, sync: Bool, environment: [String: String] = [:]) throws -> (Process, String) {
        let socket = dir + "/s.sock"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let p = try BrokerBenchmarks.start(Executables.sibling("seamd"),
                                           ["--data-dir", data ?? dir + "/data", "--socket", socket, "--no-roles", "--durability", sync ? "full" : "normal"],
                                           environment: environment)
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
        /// The saves so far: each next one starts later than all before it.
        private(set) var saves = 0

        init(work: String, sync: Bool) throws {
            let (process, socket) = try startSeamd(work, sync: sync)
            self.process = process
            others = try registerChannels(9_999, socket: socket)
            subscriber = try RawSeam(socket)
            _ = try subscriber.call("org.seam.Store.Subscribe", ["entity": "Session", "predicate": "name == \"target\"",
                                                                  "sort": "-startedAt", "limit": 1], more: true)
            saver = try RawSeam(socket)
            _ = try saver.call("org.seam.Store.Hello", ["version": 1])
        }

        func stop() { BrokerBenchmarks.stop(process) }

        func measure(rounds: Int) throws -> [Double] {
            defer { saves += rounds }
            return try ChannelBenchmarks.timeSaves(saver: saver, subscriber: subscriber, rounds: rounds, from: saves)
        }
    }

    /// Seconds from `saver` sending each save to `subscriber` holding the whole frame of its diff;
    /// the saves' start times count up from `first`, so that each is the newest (and the diff of a
    /// `-startedAt`, `limit` 1 channel). The frame is decoded after the timer stops, as libpq's
    /// client is left to look at its notification afterwards, and checked to be the diff of the
    /// save: the sequence number the saver is answered with.
    static func timeSaves(saver: RawSeam, subscriber: RawSeam, rounds: Int, from first: Int) throws -> [Double] {
        var times: [Double] = []
        for i in first..<(first + rounds) {
            let frame = RawSeam.frame("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": "target", "startedAt": .integer(Int64(1_700_000_000 + i)),
            ]]]], id: Int64(i))
            let t = Harness.now()
            try UnixSocket.writeAll(saver.fd, frame)
            try subscriber.awaitFrame()
            times.append(Double(Harness.now() - t) / 1e9)
            let heard = try subscriber.reply(), saved = try saver.reply()
            guard saved.error == nil, let sequence = saved.parameters["sequence"]?.int64Value else {
                throw BenchError("the save failed: \(saved.error ?? "") \(saved.parameters)")
            }
            guard heard.parameters["kind"]?.stringValue == "diff", heard.parameters["sequence"]?.int64Value == sequence else {
                throw BenchError("expected the diff of save \(sequence): \(heard.parameters)")
            }
        }
        return times
    }

    /// seamd with `channels` channels that no saved row matches, and a client that saves.
    final class SaveCost {
        let process: Process
        let held: [RawSeam]
        let saver: RawSeam
        private var saves = 0

        init(work: String, channels: Int, sync: Bool = false, environment: [String: String] = [:]) throws {
            let (process, socket) = try startSeamd(work, sync: sync, environment: environment)
            self.process = process
            held = try registerChannels(channels, socket: socket)
            saver = try RawSeam(socket)
            _ = try saver.call("org.seam.Store.Hello", ["version": 1])
        }

        func stop() { BrokerBenchmarks.stop(process) }

        /// Round trips of one-row saves.
        func measure(rounds: Int) throws -> [Double] {
            defer { saves += rounds }
            return try ChannelBenchmarks.timeRoundTrips(saver: saver, rounds: rounds, from: saves)
        }
    }

    /// Seconds from sending each one-row save to holding its whole reply.
    static func timeRoundTrips(saver: RawSeam, rounds: Int, from first: Int) throws -> [Double] {
        var times: [Double] = []
        times.reserveCapacity(rounds)
        for i in first..<(first + rounds) {
            let frame = RawSeam.frame("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": .string("x\(i)"), "startedAt": .integer(Int64(i)),
            ]]]], id: Int64(i))
            let t = Harness.now()
            try UnixSocket.writeAll(saver.fd, frame)
            try saver.awaitFrame()
            times.append(Double(Harness.now() - t) / 1e9)
            if let e = try saver.reply().error { throw BenchError("the save failed: \(e)") }
        }
        return times
    }

    /// One commit heard by 1,000 subscriptions (10 channels on each of 100 connections): the
    /// seconds from each save to each connection holding all its 10 diffs, a row of 100 (in the
    /// order they finished) a save. seamd at `--durability normal`, every process where the
    /// scheduler puts it.
    static func fanOut(work: String) throws {
        var fan = BenchTable("Fan-out: one commit heard by 1,000 subscriptions (10 channels) on 100 connections; seamd --durability normal, "
                                 + "placed by the scheduler; \(fanOutRounds) saves after \(fanOutWarmUp) untimed",
                             columns: ["measure", "p50", "p99"])
        let (process, socket) = try startSeamd(work + "/fanout", sync: false)
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
        let waiting = listeners.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var rounds: [[Double]] = []
        for i in 0..<(fanOutWarmUp + fanOutRounds) {
            if i == fanOutWarmUp { sync() }
            let frame = RawSeam.frame("org.seam.Store.Save", ["inserts": [["entity": "Session", "values": [
                "name": "fan", "startedAt": .integer(Int64(i)),
            ]]]], id: 1_000_000 + Int64(i))
            var fds = waiting
            var pending = [Int](repeating: sorts.count, count: listeners.count)
            var heard: [Double] = []
            heard.reserveCapacity(listeners.count)
            let t = Harness.now()
            try UnixSocket.writeAll(saver.fd, frame)
            while heard.count < listeners.count {
                guard poll(&fds, nfds_t(fds.count), 5000) > 0 else { throw BenchError("fan-out: a subscriber heard nothing in 5 s") }
                for k in fds.indices where fds[k].revents != 0 {
                    pending[k] -= try listeners[k].fillCountingFrames()
                    if pending[k] == 0 {
                        heard.append(Double(Harness.now() - t) / 1e9)
                        fds[k].events = 0  // all heard: not read again this round
                    }
                }
            }
            if i >= fanOutWarmUp { rounds.append(heard) }
            if let e = try saver.reply().error { throw BenchError("the save failed: \(e)") }
        }
        func row(_ measure: String, _ connection: Int) {
            let times = rounds.map { $0[connection] }
            fan.add([measure, Harness.duration(Harness.percentile(times, 0.5)), Harness.duration(Harness.percentile(times, 0.99))])
        }
        row("save to the first connection holding all its 10 diffs", 0)
        row("save to half the connections holding theirs", listeners.count / 2 - 1)
        row("save to the last connection holding theirs: every subscriber has heard", listeners.count - 1)
        fan.print()
        Figures.record("channels.fan_out_1000_p50", Harness.median(rounds.map { $0[listeners.count - 1] }))
    }

    // MARK: - The floor

    /// seamd's own I/O and messages for one save heard by one subscriber, with no database work:
    /// read the save, write four WAL-sized frames (a 24-byte header and a 4 KB page each, as one
    /// Session insert writes) to a pre-allocated log that is overwritten as seamd's WAL is once it
    /// has started over, fdatasync it when `synced`, then send the subscriber one frame and the
    /// saver another, both with the save's sequence number. Not the least any broker could do (one
    /// that logged less would write less): what seamd's design costs before its database and its
    /// channels. With `subscriber` false, it serves the saver alone and sends it the reply only:
    /// the floor under a save's round trip. Run as `seam-bench __relay SOCKET LOG synced|unsynced
    /// [alone]`.
    static func relay(socket: String, log path: String, synced: Bool, subscriber hasSubscriber: Bool = true) throws {
        let listener = try UnixSocket.listen(path: socket)
        UnixSocket.setNonBlocking(listener, false)
        let log = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard log >= 0 else { throw BenchError("cannot open \(path)") }
        let size = 8 << 20
        let zeros = [UInt8](repeating: 0, count: 1 << 16)
        for offset in stride(from: 0, to: size, by: zeros.count) { _ = pwrite(log, zeros, zeros.count, off_t(offset)) }
        fsync(log)
        var buffers: [Int32: [UInt8]] = [:]
        var chunk = [UInt8](repeating: 0, count: 4096)
        func frame(_ fd: Int32) -> [UInt8]? {  // the next NUL-ended frame, or nil at EOF
            while true {
                if let nul = buffers[fd, default: []].firstIndex(of: 0) {
                    let f = Array(buffers[fd]![..<nul])
                    buffers[fd]!.removeFirst(nul + 1)
                    return f
                }
                let n = read(fd, &chunk, 4096)
                if n <= 0 { return nil }
                buffers[fd, default: []] += chunk[0..<n]
            }
        }
        let reply = Array(#"{"parameters":{}}"#.utf8) + [0]
        var subscriber: Int32 = -1, saver: Int32 = -1
        while (hasSubscriber && subscriber < 0) || saver < 0 {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { continue }
            guard let first = frame(fd) else { close(fd); continue }  // a probe: connected, sent nothing
            if String(decoding: first, as: UTF8.self).contains("Subscribe") { subscriber = fd } else { saver = fd }
            try UnixSocket.writeAll(fd, reply)
        }
        let header = [UInt8](repeating: 1, count: 24), page = [UInt8](repeating: 2, count: 4096)
        var offset = 32
        var sequence = 0
        while frame(saver) != nil {
            sequence += 1
            for _ in 0..<4 {
                _ = pwrite(log, header, header.count, off_t(offset))
                _ = pwrite(log, page, page.count, off_t(offset + header.count))
                offset += header.count + page.count
            }
            if offset > size - 5 * 4120 { offset = 32 }
            if synced { fdatasync(log) }
            if hasSubscriber {
                try UnixSocket.writeAll(subscriber, Array(#"{"parameters":{"kind":"diff","sequence":\#(sequence)}}"#.utf8) + [0])
            }
            try UnixSocket.writeAll(saver, Array(#"{"parameters":{"sequence":\#(sequence)}}"#.utf8) + [0])
        }
    }

    /// The floor beside seamd and PostgreSQL: `relay` in a process of its own, with a subscriber
    /// (commit to subscriber) or without one (a save's round trip).
    final class RelayLatency {
        let process: Process
        let subscriber: RawSeam?
        let saver: RawSeam

        init(work: String, sync: Bool, subscriber hasSubscriber: Bool = true) throws {
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            let socket = work + "/relay.sock"
            process = try BrokerBenchmarks.start(Executables.sibling("seam-bench"),
                                                 ["__relay", socket, work + "/log", sync ? "synced" : "unsynced"] + (hasSubscriber ? [] : ["alone"]))
            try BrokerBenchmarks.waitForSocket(socket)
            if hasSubscriber {
                let subscriber = try RawSeam(socket)
                _ = try subscriber.call("org.seam.Store.Subscribe")
                self.subscriber = subscriber
            } else {
                subscriber = nil
            }
            saver = try RawSeam(socket)
            _ = try saver.call("org.seam.Store.Hello")
        }

        func stop() { BrokerBenchmarks.stop(process) }

        func measure(rounds: Int) throws -> [Double] {
            guard let subscriber else { return try ChannelBenchmarks.timeRoundTrips(saver: saver, rounds: rounds, from: 0) }
            return try ChannelBenchmarks.timeSaves(saver: saver, subscriber: subscriber, rounds: rounds, from: 0)
        }
    }

    // MARK: - PostgreSQL

    /// PostgreSQL with a table shaped like Session, one connection inserting with NOTIFY in the
    /// same transaction, one LISTENing.
    final class PostgresLatency {
        let server: PostgresServer
        let writer: PostgresConnection
        let listener: PostgresConnection
        /// The settings a commit's durability depends on, as the server reports them.
        let settings: String
        private var inserts = 0

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
            // PostgreSQL at its best, as seamd reuses its prepared statements: the insert and its
            // notification one statement, parsed and planned once, each run its own transaction.
            try writer.prepare("insert", """
                WITH i AS (INSERT INTO session (uuid, name, started_at) VALUES ($1, 'target', $2) RETURNING uuid)
                SELECT pg_notify('seam', uuid) FROM i
                """)
            try listener.execute("LISTEN seam")
            let names = server.durabilitySettings.map { setting in "'\(setting.prefix { $0 != "=" })'" }.joined(separator: ", ")
            settings = try writer.rows("SELECT name || '=' || setting FROM pg_settings WHERE name IN (\(names)) ORDER BY name")
                .map { $0[0] }.joined(separator: ", ")
        }

        func stop() { server.stop() }

        /// Seconds from sending each insert-and-NOTIFY to the listener's libpq holding the
        /// notification.
        func measure(rounds: Int) throws -> [Double] {
            var times: [Double] = []
            for _ in 0..<rounds {
                let uuid = UUIDText.random()
                let parameters = [uuid, String(1_700_000_000 + inserts)]
                inserts += 1
                let t = Harness.now()
                try writer.sendPrepared("insert", parameters)
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
    /// What every read lands in, made once: a read costs the bytes it brings, not a new buffer.
    private var chunk = [UInt8](repeating: 0, count: 65536)

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

    /// Reads until a whole frame is buffered (its NUL has arrived), without decoding it: a timer
    /// stops here, and `reply()` decodes the frame afterwards.
    func awaitFrame() throws {
        while !buffer[start...].contains(0) { try fill() }
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
        let n = read(fd, &chunk, 65536)
        guard n > 0 else { throw BenchError("seamd closed the connection") }
        return chunk[0..<n].reduce(0) { $0 + ($1 == 0 ? 1 : 0) }
    }

    /// Reads what the socket holds (blocking until something arrives).
    func fill() throws {
        let n = read(fd, &chunk, 65536)
        guard n > 0 else { throw BenchError("seamd closed the connection") }
        buffer += chunk[0..<n]
    }
}
