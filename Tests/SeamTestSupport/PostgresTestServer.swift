import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL for the sync tests, started by `scripts/pg-server` (Debian's packages) in a
/// directory of its own, on a port of its own, with login roles that each own a zone.
public final class PostgresTestServer {
    public let directory: String
    public let port: Int
    /// Role name → password.
    public private(set) var passwords: [String: String] = [:]
    /// Role name → the database its zone is in (the first role's, "seam", unless said).
    public private(set) var databases: [String: String] = [:]

    /// Starts a server with the role `user`; throws (with the script's output) when it cannot.
    ///
    /// The port is one the kernel does not hand out to outgoing connections, found free just
    /// before; should another server take it first, the start is tried again on another port.
    public init(user: String = "alice") throws {
        var attempt = 0
        while true {
            attempt += 1
            let directory = "/tmp/seam-pg-\(getpid())-\(UUID().uuidString.prefix(6))"
            let port = Self.freePort()
            let started: Executables.Result
            do {
                started = try Self.script(["start", directory, "--port", String(port), "--user", user])
            } catch let failure as ServerFailure where failure.description.contains("Address already in use") && attempt < 5 {
                _ = try? Self.script(["stop", directory])
                try? FileManager.default.removeItem(atPath: directory)
                continue
            }
            self.directory = directory
            self.port = port
            passwords[user] = try Self.password(started)
            return
        }
    }

    /// A port below the kernel's ephemeral range (`ip_local_port_range`), so that no outgoing
    /// connection holds it when the server binds it, or later when `restart` binds it again;
    /// and one nothing listens on now.
    static func freePort() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) } ?? []
        let ephemeralLow = range.first ?? 32_768
        let candidates = ephemeralLow > 12_000 ? 10_000..<ephemeralLow : 40_000..<60_000
        for _ in 0..<50 {
            let port = Int.random(in: candidates)
            if canBind(port) { return port }
        }
        return Int.random(in: candidates)
    }

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Adds a role (a zone of its own) in `database`: by default "seam", beside the first role,
    /// so that what keeps zones apart within one database is what is tested; nil gives it a
    /// database of its own, as `scripts/pg-server add-user` does by default.
    public func addUser(_ name: String, database: String? = "seam") throws {
        let r = try Self.script(["add-user", directory, name] + (database.map { ["--database", $0] } ?? []))
        passwords[name] = try Self.password(r)
        guard let url = r.stdout.split(separator: "\n").first(where: { $0.hasPrefix("url: ") }), let slash = url.lastIndex(of: "/") else {
            throw ServerFailure(description: "scripts/pg-server printed no URL: \(r.stdout)")
        }
        databases[name] = String(url[url.index(after: slash)...])
    }

    public func url(_ user: String) -> String { "postgresql://\(user)@127.0.0.1:\(port)/\(databases[user] ?? "seam")" }

    /// The superuser's connection string (over the Unix socket in `directory`): sees every zone.
    public var adminConnection: String { "host=\(directory) port=\(port) user=postgres dbname=seam" }

    public func restart() throws { try Self.script(["restart", directory]) }
    public func stop() throws { try Self.script(["stop", directory]) }

    deinit {
        _ = try? Self.script(["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `scripts/pg-server` with `arguments`, whatever its exit status (a test of the script).
    public static func runScript(_ arguments: [String]) throws -> Executables.Result {
        try Executables.runTool(RepositoryFiles.url("scripts/pg-server").path, arguments)
    }

    /// The libpq connection string of `user` (password included), over TCP.
    public func connection(_ user: String) -> String {
        "\(url(user))?password=\(passwords[user] ?? "")"
    }

    @discardableResult
    static func script(_ arguments: [String]) throws -> Executables.Result {
        let r = try Executables.runTool(RepositoryFiles.url("scripts/pg-server").path, arguments)
        guard r.status == 0 else { throw ServerFailure(description: "scripts/pg-server \(arguments.joined(separator: " ")): \(r.stderr)\(r.stdout)") }
        return r
    }

    static func password(_ r: Executables.Result) throws -> String {
        guard let line = r.stdout.split(separator: "\n").first(where: { $0.hasPrefix("password: ") }) else {
            throw ServerFailure(description: "scripts/pg-server printed no password: \(r.stdout)")
        }
        return String(line.dropFirst("password: ".count))
    }

    public struct ServerFailure: Error, CustomStringConvertible { public var description: String }
}
