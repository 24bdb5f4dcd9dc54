import SeamJSON

/// What `seam sync setup` was told, and what it refuses.
public struct SyncSetupError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A PostgreSQL connection URL, as far as Seam needs to understand it: who, where, which
/// database — and that it holds no password (passwords live in a 0600 file, or libpq's own).
public struct SyncURL: Sendable, Equatable {
    public var text: String
    public var user: String
    /// As libpq takes it: a name, an address (an IPv6 one without its brackets), or the
    /// directory of a Unix socket (`%2F`-escaped in the URL, or its `host=` parameter).
    public var host: String
    public var port: Int
    public var database: String
    /// A libpq service name (`?service=`): then user, host and port may come from the service file.
    public var service: String?

    /// Parses `postgresql://USER@HOST[:PORT]/DATABASE[?…]` (or `postgres://`).
    public static func parse(_ text: String) throws(SyncSetupError) -> SyncURL {
        let schemes = ["postgresql://", "postgres://"]
        guard let scheme = schemes.first(where: { text.hasPrefix($0) }) else {
            throw SyncSetupError("give a URL such as postgresql://alice@db.example.net/seam (it starts with postgresql://)")
        }
        var rest = Substring(text.dropFirst(scheme.count))
        var service: String?
        var query: [Substring] = []
        func parameter(_ name: String) -> Substring? {
            query.last { $0.hasPrefix(name + "=") }.map { $0.dropFirst(name.count + 1) }
        }
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...].split(separator: "&")
            if parameter("password") != nil {
                throw SyncSetupError("put no password in the URL: seam sync setup asks for it and keeps it in a 0600 file")
            }
            service = parameter("service").map(String.init)
            rest = rest[..<q]
        }
        guard let at = rest.lastIndex(of: "@") else {
            // postgresql:///?service=NAME: who and where come from libpq's service file.
            if let service, !service.isEmpty, !rest.contains(":") {
                let database = rest.split(separator: "/").first.map(String.init) ?? ""
                return SyncURL(text: text, user: "", host: "", port: 5432, database: database, service: service)
            }
            throw SyncSetupError("the URL names no user: postgresql://USER@HOST/DATABASE (or postgresql:///?service=NAME)")
        }
        let userPart = rest[..<at]
        if userPart.contains(":") {
            throw SyncSetupError("put no password in the URL: seam sync setup asks for it and keeps it in a 0600 file")
        }
        var hostPart = rest[rest.index(after: at)...]
        var database = "seam"
        if let slash = hostPart.firstIndex(of: "/") {
            let name = hostPart[hostPart.index(after: slash)...]
            if !name.isEmpty { database = String(name) }
            hostPart = hostPart[..<slash]
        }
        var port = 5432
        if let colon = hostPart.lastIndex(of: ":"), !hostPart.hasSuffix("]") {
            port = try Self.port(hostPart[hostPart.index(after: colon)...])
            hostPart = hostPart[..<colon]
        }
        // libpq reads the query after the rest: its host and port win.
        if let h = parameter("host") { hostPart = h }
        if let p = parameter("port") { port = try Self.port(p) }
        guard !userPart.isEmpty, !hostPart.isEmpty else { throw SyncSetupError("the URL needs a user and a host: postgresql://USER@HOST/DATABASE") }
        var host = Self.decoded(hostPart)
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }  // an IPv6 address
        return SyncURL(text: text, user: Self.decoded(userPart), host: host, port: port, database: Self.decoded(Substring(database)),
                       service: service)
    }

    private static func port(_ text: Substring) throws(SyncSetupError) -> Int {
        guard let p = Int(text), (1...65535).contains(p) else {
            throw SyncSetupError("the port in the URL is not a number from 1 to 65535")
        }
        return p
    }

    /// Undoes %XX escapes (a user name with an @, say).
    private static func decoded(_ s: Substring) -> String {
        var bytes: [UInt8] = []
        var i = s.utf8.startIndex
        let u = s.utf8
        while i < u.endIndex {
            if u[i] == UInt8(ascii: "%"), let a = u.index(i, offsetBy: 1, limitedBy: u.endIndex), a < u.endIndex,
               let b = u.index(i, offsetBy: 2, limitedBy: u.endIndex), b < u.endIndex,
               let hi = hex(u[a]), let lo = hex(u[b]) {
                bytes.append(hi << 4 | lo)
                i = u.index(after: b)
            } else {
                bytes.append(u[i])
                i = u.index(after: i)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The line of a libpq password file for this URL (`host:port:database:user:password`,
    /// with `:` and `\` escaped). libpq matches its host field against the host as it takes it:
    /// an IPv6 address without brackets, a socket's directory as a path.
    public func passwordFileLine(password: String) -> String {
        func escaped(_ s: String) -> String {
            var out = ""
            for c in s {
                if c == ":" || c == "\\" { out.append("\\") }
                out.append(c)
            }
            return out
        }
        return [host, String(port), database, user, password].map(escaped).joined(separator: ":") + "\n"
    }
}

/// `sync.json`, beside `seamd.json`: the server to sync with, where its password is, and where
/// the zone's key is.
///
///     {"url": "postgresql://alice@db.example.net/seam", "passwordFile": "/home/alice/.config/seam/sync.pgpass",
///      "keyFile": "/home/alice/.config/seam/sync.key"}
public struct SyncConfiguration: Sendable, Equatable {
    public var url: String
    /// A libpq password file (mode 0600) with the password, or nil: libpq's own files.
    public var passwordFile: String?
    /// The zone's key (`ZoneKey`, mode 0600), or nil: a setup made before encrypted fields,
    /// which syncs only while the model encrypts nothing.
    public var keyFile: String?
    /// Seconds between polls of the server when no notification comes.
    public var pollInterval: Double = 5

    public init(url: String, passwordFile: String?) {
        self.url = url
        self.passwordFile = passwordFile
    }

    public static func parse(_ bytes: [UInt8], path: String) throws(SyncSetupError) -> SyncConfiguration {
        guard let object = (try? JSON.decode(bytes))?.objectValue else {
            throw SyncSetupError("\(path) is not a JSON object; run `seam sync setup URL` again")
        }
        guard let url = object["url"]?.stringValue else { throw SyncSetupError("\(path) has no \"url\"; run `seam sync setup URL` again") }
        _ = try SyncURL.parse(url)
        var c = SyncConfiguration(url: url, passwordFile: object["passwordFile"]?.stringValue)
        c.keyFile = object["keyFile"]?.stringValue
        if let p = object["pollInterval"]?.doubleValue, p >= 0.05, p <= 3600 { c.pollInterval = p }
        return c
    }

    public var encoded: [UInt8] {
        var o: JSONObject = ["url": .string(url)]
        if let passwordFile { o["passwordFile"] = .string(passwordFile) }
        if let keyFile { o["keyFile"] = .string(keyFile) }
        if pollInterval != 5 { o["pollInterval"] = .double(pollInterval) }
        return JSON.object(o).encoded() + [10]
    }
}
