import Foundation
import SeamClient
import SeamJSON
import SeamSchema
import SeamSystem

/// Benchmarks of seamd over its socket (issue: seamd and its protocol), beside a raw Unix-socket
/// ping-pong (the floor) and Redis GET over a Unix socket, all measured in the same run.
enum BrokerBenchmarks {
    static var roundTrips: Int { Bench.size(20_000, quick: 4_000) }

    static func run() throws {
        let work = try Harness.scratchDirectory("broker")
        defer { try? FileManager.default.removeItem(atPath: work) }
        var table = BenchTable("seamd over a Unix socket, beside the floor and Redis (same run)",
                               columns: ["measure", "seamd", "raw ping-pong", "redis-server", "seamd / redis"])

        // seamd with some sessions to fetch.
        let socket = work + "/seamd.sock"
        let seamd = try start(Executables.sibling("seamd"), ["--data-dir", work + "/data", "--socket", socket, "--no-roles"])
        defer { stop(seamd) }
        try waitForSocket(socket)
        let client = try SeamConnection.connect(path: socket)
        try client.hello()
        var uuids: [String] = []
        for batch in 0..<10 {
            var inserts: [JSON] = []
            for i in 0..<100 {
                let u = UUIDText.random()
                uuids.append(u)
                inserts.append(["entity": "Session", "values": ["uuid": .string(u), "name": .string("s\(batch)-\(i)"), "startedAt": 1_700_000_000]])
            }
            _ = try client.call("org.seam.Store.Save", ["inserts": .array(inserts)])
        }
        let idleRSS = try client.call("org.seam.Store.Status")["rss"]?.int64Value ?? 0

        // Fetch by uuid, one client.
        var seamTimes: [Double] = []
        for i in 0..<roundTrips {
            let u = uuids[i % uuids.count]
            let t = Harness.now()
            _ = try client.call("org.seam.Store.Fetch", ["entity": "Session", "uuid": .string(u)])
            seamTimes.append(Double(Harness.now() - t) / 1e9)
        }

        // The same fetches from a raw client, as minimal as the Redis one (the request bytes made
        // beforehand, the reply read up to its NUL and checked to hold a row, nothing decoded),
        // taking turns with Redis GET and with the floor — a ping-pong with a child that echoes —
        // in blocks of 1,000, so that the machine's drift during the run falls on all alike. Once
        // as the scheduler places the processes, then with every pair placed alike: on this
        // machine a round trip between two CPUs costs several times one within a CPU (waking an
        // idle virtual CPU is slow), and where the scheduler puts each pair varies from run to run.
        let redis = try? RedisBench(work: work)
        defer { redis?.stop() }
        let echoPath = work + "/echo.sock"
        let echo = try start(CommandLine.arguments[0], ["__echo", echoPath])
        defer { stop(echo) }
        try waitForSocket(echoPath)
        let servers = [seamd.processIdentifier, echo.processIdentifier] + (redis.map { [$0.process.processIdentifier] } ?? [])
        func p(_ xs: [Double], _ q: Double) -> String { xs.isEmpty ? "n/a" : Harness.duration(Harness.percentile(xs, q)) }
        func r(_ a: [Double], _ b: [Double], _ q: Double) -> String {
            b.isEmpty ? "n/a" : Harness.ratio(Harness.percentile(a, q), Harness.percentile(b, q))
        }
        var worstToRedis = 0.0
        for placement in CPUPlacement.available {
            try placement.apply(client: true, servers: servers)
            var rawTimes: [Double] = [], redisTimes: [Double] = [], floorTimes: [Double] = []
            let block = 1_000
            for turn in 0..<(roundTrips / block) {
                rawTimes += try rawFetches(socket: socket, uuids: uuids, count: block, from: turn * block)
                if let redis { redisTimes += try redis.getLatencies(count: block) }
                floorTimes += try pingPong(path: echoPath, count: block)
            }
            worstToRedis = max(worstToRedis, redisTimes.isEmpty ? .nan : Harness.median(rawTimes) / Harness.median(redisTimes))
            for q in [0.5, 0.99] {
                table.add(["fetch by uuid round trip p\(Int(q * 100)), raw client, \(placement.label)", p(rawTimes, q), p(floorTimes, q),
                           p(redisTimes, q), r(rawTimes, redisTimes, q)])
            }
        }
        try CPUPlacement.scheduler.apply(client: true, servers: servers)
        // SeamClient alone: a raw client has nothing to decode.
        let redisTimes = try redis.map { try $0.getLatencies(count: roundTrips) } ?? []
        table.add(["fetch by uuid round trip p50, SeamClient, \(CPUPlacement.scheduler.label)", p(seamTimes, 0.5), "-", p(redisTimes, 0.5),
                   r(seamTimes, redisTimes, 0.5)])
        table.add(["fetch by uuid round trip p99, SeamClient, \(CPUPlacement.scheduler.label)", p(seamTimes, 0.99), "-", p(redisTimes, 0.99),
                   r(seamTimes, redisTimes, 0.99)])

        // 50 concurrent clients.
        let seamRPS = try concurrent(clients: 50, seconds: Bench.size(3, quick: 1)) { () throws -> () throws -> Void in
            let c = try SeamConnection.connect(path: socket)
            var i = 0
            return {
                i += 1
                _ = try c.call("org.seam.Store.Fetch", ["entity": "Session", "uuid": .string(uuids[i % uuids.count])])
            }
        }
        let redisRPS = try redis.map { r in try concurrent(clients: 50, seconds: Bench.size(3, quick: 1)) { try r.getter() } }
        table.add(["50 concurrent clients, requests/s", String(format: "%.0f", seamRPS), "-",
                   redisRPS.map { String(format: "%.0f", $0) } ?? "n/a", redisRPS.map { String(format: "%.2f×", seamRPS / $0) } ?? "n/a"])
        table.add(["seamd RSS, idle (1,000 sessions)", String(format: "%.1f MB", Double(idleRSS) / 1_048_576), "-", "-", "-"])
        table.print()
        print("targets: p50 ≤ 1.25× Redis's; 50 clients ≥ 0.5× Redis's requests/s; idle RSS ≤ 20 MB")
        Figures.record("broker.fetch_p50_vs_redis_worst_placement", worstToRedis)
        Figures.record("broker.concurrent_requests_vs_redis", redisRPS.map { seamRPS / $0 } ?? .nan)
        Figures.record("broker.idle_rss", Double(idleRSS))
        print("(seamd polls \(SeamdSpin.described) after a turn with work before it sleeps (--spin); Redis and the floor sleep at once)")
        print("(placed by the scheduler: wherever the kernel runs each process; one CPU: the client and every server on CPU 0;")
        print(" two CPUs: the client on CPU 0, every server on CPU 1 — each system measured in the same placement as the others)")
        if redis == nil { print("(redis-server not found: scripts/bench installs it with apt-get)") }
    }

    // MARK: - Helpers

    static func start(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        p.standardError = FileHandle.nullDevice
        if let log = ProcessInfo.processInfo.environment["SEAM_BENCH_SEAMD_LOG"], path.hasSuffix("seamd") {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            p.standardError = FileHandle(forWritingAtPath: log)
            p.arguments = arguments + ["--log-level", "debug"]
        }
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        return p
    }

    static func stop(_ p: Process) {
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
    }

    static func waitForSocket(_ path: String) throws {
        for _ in 0..<400 {
            if let fd = try? UnixSocket.connect(path: path) {
                close(fd)
                return
            }
            usleep(25_000)
        }
        throw BenchError("nothing answers on \(path)")
    }

    /// Fetch-by-uuid round trips with prepared request bytes; each reply must hold its row.
    static func rawFetches(socket: String, uuids: [String], count: Int = roundTrips, from first: Int = 0) throws -> [Double] {
        let fd = try UnixSocket.connect(path: socket)
        defer { close(fd) }
        let requests = uuids.map { u in
            Array(#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session","uuid":"\#(u)"}}"#.utf8) + [0]
        }
        let hit = Array(#"{"parameters":{"rows":[{"#.utf8)
        var buffer = [UInt8](repeating: 0, count: 65536)
        var times: [Double] = []
        for i in first..<(first + count) {
            let t = Harness.now()
            try UnixSocket.writeAll(fd, requests[i % requests.count])
            var got = 0
            repeat {
                let n = read(fd, &buffer[got], buffer.count - got)
                if n <= 0 { throw BenchError("seamd closed the connection") }
                got += n
            } while buffer[got - 1] != 0
            times.append(Double(Harness.now() - t) / 1e9)
            guard buffer[0..<hit.count].elementsEqual(hit) else {
                throw BenchError("unexpected reply: \(String(decoding: buffer[0..<got], as: UTF8.self))")
            }
        }
        return times
    }

    /// Round trips of one small message to the child process that echoes it back on `path`.
    static func pingPong(path: String, count: Int) throws -> [Double] {
        let fd = try UnixSocket.connect(path: path)
        defer { close(fd) }
        let message = Array(#"{"method":"org.seam.Store.Fetch","parameters":{"entity":"Session"}}"#.utf8) + [0]
        var buffer = [UInt8](repeating: 0, count: 4096)
        var times: [Double] = []
        for _ in 0..<count {
            let t = Harness.now()
            try UnixSocket.writeAll(fd, message)
            var got = 0
            while got < message.count {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { throw BenchError("echo closed") }
                got += n
            }
            times.append(Double(Harness.now() - t) / 1e9)
        }
        return times
    }

    /// Child mode: echo every byte received, one connection after another.
    static func echo(_ path: String) throws {
        let listener = try UnixSocket.listen(path: path)
        UnixSocket.setNonBlocking(listener, false)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { continue }
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                try UnixSocket.writeAll(fd, Array(buffer[0..<n]))
            }
            close(fd)
        }
    }

    /// Runs `clients` threads, each calling the closure its factory returns, for `seconds`.
    static func concurrent(clients: Int, seconds: Double, _ factory: () throws -> () throws -> Void) throws -> Double {
        let workers = try (0..<clients).map { _ in try factory() }
        let counter = Counter()
        let deadline = Date().addingTimeInterval(seconds)
        let group = DispatchGroup()
        for w in workers {
            let box = UncheckedBox(w)
            Thread.detachNewThread {
                group.enter()
                var n = 0
                while Date() < deadline {
                    do { try box.value() } catch { break }
                    n += 1
                }
                counter.add(n)
                group.leave()
            }
        }
        Thread.sleep(forTimeInterval: 0.05)
        group.wait()
        return Double(counter.total) / seconds
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var total = 0
    func add(_ n: Int) { lock.lock(); total += n; lock.unlock() }
}

final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ v: T) { value = v }
}

/// A redis-server on a Unix socket, persistence off, and a minimal RESP client.
final class RedisBench {
    let process: Process
    let path: String

    init(work: String) throws {
        guard let server = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first(where: FileManager.default.fileExists) else {
            throw BenchError("no redis-server")
        }
        path = work + "/redis.sock"
        process = try BrokerBenchmarks.start(server, ["--port", "0", "--unixsocket", path, "--save", "", "--appendonly", "no"])
        try BrokerBenchmarks.waitForSocket(path)
        let fd = try UnixSocket.connect(path: path)
        defer { close(fd) }
        try UnixSocket.writeAll(fd, Array("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$200\r\n\(String(repeating: "v", count: 200))\r\n".utf8))
        _ = try Self.readReply(fd)
    }

    func stop() { BrokerBenchmarks.stop(process) }

    static let get = Array("*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n".utf8)

    /// Reads one RESP reply (a bulk string or a simple status), whole.
    static func readReply(_ fd: Int32) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var got: [UInt8] = []
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { throw BenchError("redis closed") }
            got += buffer[0..<n]
            if got.first == UInt8(ascii: "+"), got.suffix(2) == [13, 10] { return got.count }
            if got.first == UInt8(ascii: "$"), let crlf = got.firstIndex(of: 13), let len = Int(String(decoding: got[1..<crlf], as: UTF8.self)),
               got.count >= crlf + 2 + len + 2 {
                return got.count
            }
        }
    }

    func getLatencies(count: Int) throws -> [Double] {
        let fd = try UnixSocket.connect(path: path)
        defer { close(fd) }
        var out: [Double] = []
        for _ in 0..<count {
            let t = Harness.now()
            try UnixSocket.writeAll(fd, Self.get)
            _ = try Self.readReply(fd)
            out.append(Double(Harness.now() - t) / 1e9)
        }
        return out
    }

    func getter() throws -> () throws -> Void {
        let fd = try UnixSocket.connect(path: path)
        return {
            try UnixSocket.writeAll(fd, Self.get)
            _ = try Self.readReply(fd)
        }
    }
}

enum Executables {
    /// An executable built beside this one.
    static func sibling(_ name: String) -> String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// Where a benchmark's client and servers run, so that systems compared are placed alike.
enum CPUPlacement: CaseIterable {
    /// Wherever the kernel puts them.
    case scheduler
    /// The client and every server on CPU 0.
    case oneCPU
    /// The client on CPU 0, every server on CPU 1.
    case twoCPUs

    var label: String {
        switch self {
        case .scheduler: "placed by the scheduler"
        case .oneCPU: "one CPU"
        case .twoCPUs: "two CPUs"
        }
    }

    /// The placements this machine has the CPUs for.
    static var available: [CPUPlacement] {
        ProcessInfo.processInfo.activeProcessorCount >= 2 ? allCases : [.scheduler]
    }

    /// Pins (or frees) the calling thread when `client`, and every thread of the servers.
    func apply(client: Bool, servers: [Int32]) throws {
        let (clientMask, serverMask): (UInt64, UInt64) = switch self {
        case .scheduler: (0, 0)
        case .oneCPU: (1, 1)
        case .twoCPUs: (1, 2)
        }
        if client { try Processes.pinThisThread(toCPUs: clientMask) }
        for pid in servers { try Processes.pin(pid, toCPUs: serverMask) }
    }
}
