import Foundation

/// A real PostgreSQL for the sync tests, started by `scripts/pg-server` (Debian's packages) in a
/// directory of its own, on a port of its own, with login roles that each own a zone.
public final class PostgresTestServer {
    public let directory: String
    public let port: Int
    /// Role name → password.
    public private(set) var passwords: [String: String] = [:]

    /// Starts a server with the role `user`; throws (with the script's output) when it cannot.
    public init(user: String = "alice") throws {
        directory = "/tmp/seam-pg-\(getpid())-\(UUID().uuidString.prefix(6))"
        port = Int.random(in: 20_000...60_000)
        let r = try Self.script(["start", directory, "--port", String(port), "--user", user])
        passwords[user] = try Self.password(r)
    }

    /// Adds a role (a zone of its own).
    public func addUser(_ name: String) throws {
        passwords[name] = try Self.password(try Self.script(["add-user", directory, name]))
    }

    public func url(_ user: String) -> String { "postgresql://\(user)@127.0.0.1:\(port)/seam" }

    /// The superuser's connection string (over the Unix socket in `directory`): sees every zone.
    public var adminConnection: String { "host=\(directory) port=\(port) user=postgres dbname=seam" }

    public func restart() throws { try Self.script(["restart", directory]) }
    public func stop() throws { try Self.script(["stop", directory]) }

    deinit {
        _ = try? Self.script(["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
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
