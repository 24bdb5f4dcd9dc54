import CLibPQ
import Foundation

/// A throwaway PostgreSQL cluster from Debian's packages, on a Unix socket in a temporary
/// directory, for comparisons measured in the same run. Run as root, the server runs as the
/// `postgres` user (PostgreSQL refuses root).
final class PostgresServer {
    let directory: String
    let socketDirectory: String
    private let binaries: String
    private let asPostgres: Bool

    /// The settings a commit's durability depends on, as the server was started with them.
    let durabilitySettings: [String]

    /// Starts a new cluster with `fsync` on or off. `synchronous_commit` stays on either way, so
    /// that a commit always writes its WAL to the kernel before it answers (it survives the
    /// server's crash, as a commit of seamd's `--durability normal` does); `fsync` decides
    /// whether that WAL is also synced to disk. The WAL is synced with fdatasync and full pages
    /// are written after each checkpoint, both set rather than left to the build's defaults.
    init(work: String, fsync: Bool) throws {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw BenchError("PostgreSQL is not installed (scripts/bench installs the Debian package postgresql)")
        }
        binaries = "/usr/lib/postgresql/\(version)/bin"
        directory = work + "/pg-\(fsync ? "sync" : "nosync")"
        socketDirectory = directory
        asPostgres = getuid() == 0
        durabilitySettings = ["fsync=\(fsync ? "on" : "off")", "synchronous_commit=on", "wal_sync_method=fdatasync", "full_page_writes=on"]
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if asPostgres { try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        try runTool("initdb", ["-D", directory + "/data", "-U", "seam", "--auth=trust", "--no-sync", "-E", "UTF8"])
        try runTool("pg_ctl", ["-D", directory + "/data", "-l", directory + "/log", "-w", "-o",
                               "-k \(socketDirectory) -c listen_addresses='' " + durabilitySettings.map { "-c " + $0 }.joined(separator: " "),
                               "start"])
    }

    var connectionString: String { "host=\(socketDirectory) user=seam dbname=postgres" }

    /// The postmaster and every process it has started (backends, the WAL writer, …), for
    /// placing them on CPUs.
    var processes: [Int32] {
        guard let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
              let line = text.split(separator: "\n").first, let postmaster = Int32(line) else { return [] }
        var all = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After "pid (comm) ": the state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == postmaster { all.append(pid) }
        }
        return all
    }

    func stop() {
        try? runTool("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
    }

    private func runTool(_ tool: String, _ arguments: [String]) throws {
        if asPostgres {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", binaries + "/" + tool] + arguments)
        } else {
            try Self.run(binaries + "/" + tool, arguments)
        }
    }

    /// Runs a tool and waits for it (posix_spawn and waitpid: Foundation's Process waits for
    /// the pipes and children a server's start script leaves behind).
    private static func run(_ path: String, _ arguments: [String]) throws {
        let log = NSTemporaryDirectory() + "seam-bench-pg-\(getpid()).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError("cannot run \(path): errno \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw BenchError("\(path) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
    }
}

/// A libpq connection: the one checked place where the bench calls libpq.
final class PostgresConnection {
    private let connection: OpaquePointer

    init(_ conninfo: String) throws {
        guard let c = PQconnectdb(conninfo) else { throw BenchError("libpq could not allocate a connection") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(c))
            PQfinish(c)
            throw BenchError("cannot connect to PostgreSQL (\(conninfo)): \(message)")
        }
        connection = c
    }

    deinit { PQfinish(connection) }

    /// Runs `sql` (several statements allowed) and checks that it succeeded.
    func execute(_ sql: String) throws {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection))) in \(sql)")
        }
    }

    /// Parses and plans `sql` once as the statement `name` (PQprepare); its parameters' types
    /// are inferred from the statement.
    func prepare(_ name: String, _ sql: String) throws {
        let result = PQprepare(connection, name, sql, 0, nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection))) in \(sql)")
        }
    }

    /// Sends the prepared statement `name` with text `parameters` without waiting for its
    /// result (collect it with `finishQuery`); PQsendQueryPrepared.
    func sendPrepared(_ name: String, _ parameters: [String]) throws {
        let values: [UnsafeMutablePointer<CChar>?] = parameters.map { strdup($0) }
        defer { values.forEach { free($0) } }
        let sent = values.map { $0.map { UnsafePointer($0) } }
            .withUnsafeBufferPointer { PQsendQueryPrepared(connection, name, Int32(parameters.count), $0.baseAddress, nil, nil, 0) }
        guard sent == 1 else { throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection)))") }
    }

    /// Waits for the results of the query sent last and checks them.
    func finishQuery() throws {
        while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
                throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection)))")
            }
        }
    }

    /// The connection's socket, to poll beside other descriptors.
    var socket: Int32 { PQsocket(connection) }

    /// A query's rows, each value as text (NULL as "").
    func rows(_ sql: String) throws -> [[String]] {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else {
            throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection))) in \(sql)")
        }
        return (0..<PQntuples(result)).map { r in (0..<PQnfields(result)).map { String(cString: PQgetvalue(result, r, $0)) } }
    }

    /// Reads what the socket holds (never blocks) and returns the payloads of the
    /// notifications that have arrived.
    func notifications() throws -> [String] {
        guard PQconsumeInput(connection) == 1 else { throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection)))") }
        var out: [String] = []
        while let n = PQnotifies(connection) {
            out.append(String(cString: n.pointee.extra))
            PQfreemem(n)
        }
        return out
    }

    /// Waits for the next notification and returns its payload.
    func nextNotification(timeoutMilliseconds: Int32 = 5000) throws -> String {
        while true {
            if let n = PQnotifies(connection) {
                defer { PQfreemem(n) }
                return String(cString: n.pointee.extra)
            }
            var p = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, timeoutMilliseconds) > 0 else { throw BenchError("no notification within \(timeoutMilliseconds) ms") }
            guard PQconsumeInput(connection) == 1 else { throw BenchError("PostgreSQL: \(String(cString: PQerrorMessage(connection)))") }
        }
    }
}
