import CLibPQ

/// Why a PostgreSQL call failed: the SQLSTATE when the server gave one, and its message.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE ("40001", "23505", …), or nil for a connection failure.
    public var sqlState: String?
    public var message: String
    /// The statement, for context (never its parameters: they may hold a person's data).
    public var sql: String?

    public init(sqlState: String?, message: String, sql: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    /// Whether the connection itself broke (reconnect), rather than one statement failing.
    public var isConnectionLoss: Bool { sqlState == nil || sqlState!.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P03" }

    public var description: String {
        var text = message.trimmingCharacters(in: [" ", "\n"])
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let sql { text += " in: \(sql.prefix(120))" }
        return text
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return String(s)
    }
}

/// One libpq connection: the only place Seam calls libpq. Text parameters and results
/// (PostgreSQL's own text forms), one statement at a time, LISTEN/NOTIFY through `socket`.
public final class PostgresConnection {
    private let handle: OpaquePointer

    /// Connects with a libpq connection string or URL (`postgresql://user@host/db`,
    /// `host=… dbname=…`). The password, if any, comes from libpq's password file
    /// (`PGPASSFILE`, `~/.pgpass`) or service file, never from Seam's logs.
    public init(_ conninfo: String) throws(PostgresError) {
        guard let h = PQconnectdb(conninfo) else { throw PostgresError(sqlState: nil, message: "out of memory") }
        guard PQstatus(h) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(h))
            PQfinish(h)
            throw PostgresError(sqlState: nil, message: message)
        }
        handle = h
    }

    deinit { PQfinish(handle) }

    /// The descriptor to wait on for notifications (readable: call `notifications()`).
    public var socket: Int32 { PQsocket(handle) }

    public var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs one statement with text parameters (`$1`, `$2`, … ; nil is SQL NULL) and returns
    /// its rows, each column as text or nil.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> [[String?]] {
        precondition(pending == nil, "a query is sent and not yet finished (finishSent)")
        let result = withParameters(parameters) { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        guard let result else { throw PostgresError(sqlState: nil, message: String(cString: PQerrorMessage(handle)), sql: sql) }
        defer { PQclear(result) }
        return try Self.rows(of: result, sql: sql)
    }

    /// The statement `send` started, until `finishSent` reads its answer.
    private var pending: String?

    /// Starts one statement as `query` does, without waiting for its answer: the caller works
    /// meanwhile (a sync worker prepares its next page while the server inserts this one), then
    /// calls `finishSent`, before anything else on this connection.
    public func send(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) {
        try send(sql, parameters.map { PostgresParameter.text($0) })
    }

    /// `send` with parameters each in text or PostgreSQL's binary form (`PostgresArray.binary`:
    /// many values that the server takes without parsing or unescaping an array literal).
    public func send(_ sql: String, _ parameters: [PostgresParameter]) throws(PostgresError) {
        precondition(pending == nil, "a query is sent and not yet finished (finishSent)")
        let sent = withParameters(parameters) { values, lengths, formats in
            PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values, lengths, formats, 0)
        }
        guard sent == 1 else { throw PostgresError(sqlState: nil, message: String(cString: PQerrorMessage(handle)), sql: sql) }
        pending = sql
    }

    /// The rows of the statement `send` started (its error thrown); waits for them.
    @discardableResult
    public func finishSent() throws(PostgresError) -> [[String?]] {
        guard let sql = pending else { return [] }
        pending = nil
        // Every result is read, up to libpq's nil: the connection is ready for the next query.
        var first: OpaquePointer?
        while let result = PQgetResult(handle) {
            if first == nil { first = result } else { PQclear(result) }
        }
        guard let first else { throw PostgresError(sqlState: nil, message: String(cString: PQerrorMessage(handle)), sql: sql) }
        defer { PQclear(first) }
        return try Self.rows(of: first, sql: sql)
    }

    /// A result's rows, each column as text or nil; its error thrown.
    private static func rows(of result: OpaquePointer, sql: String) throws(PostgresError) -> [[String?]] {
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            break
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(sqlState: state, message: String(cString: PQresultErrorMessage(result)), sql: sql)
        }
        let rows = Int(PQntuples(result)), columns = Int(PQnfields(result))
        var out: [[String?]] = []
        out.reserveCapacity(rows)
        for r in 0..<rows {
            var row: [String?] = []
            row.reserveCapacity(columns)
            for c in 0..<columns {
                if PQgetisnull(result, Int32(r), Int32(c)) != 0 {
                    row.append(nil)
                } else {
                    row.append(String(cString: PQgetvalue(result, Int32(r), Int32(c))))
                }
            }
            out.append(row)
        }
        return out
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try query("BEGIN")
        do {
            let value = try body()
            try query("COMMIT")
            return value
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    /// The notifications received so far (after the socket was readable), channel and payload;
    /// with `othersOnly`, not those this connection's own session sent.
    public func notifications(othersOnly: Bool = false) throws(PostgresError) -> [(channel: String, payload: String)] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(sqlState: nil, message: String(cString: PQerrorMessage(handle)))
        }
        let own = PQbackendPID(handle)
        var out: [(String, String)] = []
        while let n = PQnotifies(handle) {
            if !othersOnly || n.pointee.be_pid != own { out.append((String(cString: n.pointee.relname), String(cString: n.pointee.extra))) }
            PQfreemem(n)
        }
        return out
    }

    /// Makes every name this session's statements do not qualify resolve in `pg_catalog` alone
    /// (`pg_temp` last): another role's schema named like ours, or `public`, then cannot put
    /// a function of theirs (a `nextval(text)`, say) in place of the one meant, to run as us.
    /// For a client whose every table is schema-qualified.
    public func pinSearchPath() throws(PostgresError) {
        try query("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)")
    }

    /// Bounds how long any statement, and any wait for a lock, may take (0 for no bound): past
    /// them the statement fails (SQLSTATE 57014 or 55P03) instead of waiting for ever.
    public func setTimeouts(statement: Double, lock: Double) throws(PostgresError) {
        try query("SELECT pg_catalog.set_config('statement_timeout', $1, false), pg_catalog.set_config('lock_timeout', $2, false)",
                  [String(Int(statement * 1000)), String(Int(lock * 1000))])
    }

    private func withParameters<R>(_ parameters: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        withParameters(parameters.map { PostgresParameter.text($0) }) { values, _, _ in body(values) }
    }

    /// Calls `body` with libpq's three parameter arrays: values, lengths and formats (lengths
    /// and formats matter for binary values alone).
    private func withParameters<R>(_ parameters: [PostgresParameter],
                                   _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> R) -> R {
        // Each a copy that lives until `body` returns (text ones NUL-terminated).
        let copies: [UnsafeMutableBufferPointer<CChar>?] = parameters.map { p in
            switch p {
            case .text(nil): return nil
            case .text(let text?):
                let c = text.utf8CString
                let copy = UnsafeMutableBufferPointer<CChar>.allocate(capacity: c.count)
                _ = copy.initialize(from: c)
                return copy
            case .binary(let bytes):
                let copy = UnsafeMutableBufferPointer<CChar>.allocate(capacity: max(1, bytes.count))
                bytes.withUnsafeBytes { raw in _ = copy.initialize(from: raw.bindMemory(to: CChar.self)) }
                return copy
            }
        }
        defer { copies.forEach { $0?.deallocate() } }
        let lengths = parameters.map { p -> Int32 in if case .binary(let b) = p { return Int32(b.count) } else { return 0 } }
        let formats = parameters.map { p -> Int32 in if case .binary = p { return 1 } else { return 0 } }
        return body(copies.map { $0.map { UnsafePointer($0.baseAddress!) } }, lengths, formats)
    }
}

/// A statement's parameter: text (nil is SQL NULL), or a value in PostgreSQL's binary form.
public enum PostgresParameter: Sendable {
    case text(String?)
    case binary([UInt8])
}

/// PostgreSQL's text form of a one-dimensional array, for passing many values as one parameter
/// (`$1::text[]`, `$2::jsonb[]`, then `unnest`): every element quoted, `"` and `\` escaped.
public enum PostgresArray {
    public static func literal(_ elements: [String]) -> String {
        // Built as bytes: a first export sends 500 records of JSON a statement, and appending
        // them a scalar at a time was half of the sync worker's time.
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(elements.reduce(2) { $0 + $1.utf8.count + 3 })
        for (i, element) in elements.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An array's element types this builds in binary form, by their PostgreSQL type oid.
    public enum Element: UInt32, Sendable {
        case text = 25
        /// Each element the JSON text, taken by the server as `jsonb` (format version 1).
        case jsonb = 3802
    }

    /// A one-dimensional array of `elements` in PostgreSQL's binary form (`array_send`'s), for a
    /// `$n::text[]` or `$n::jsonb[]` parameter: the server copies each element as it is, where a
    /// literal must be scanned and unescaped byte by byte — a first export's pages spent a sixth of
    /// the server's time on that. Elements are not checked here: the server checks each as it
    /// reads it (JSON that is not is refused, 22P02; so is text invalid in its encoding).
    public static func binary(_ elements: [String], of element: Element) -> PostgresParameter {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(elements.reduce(20) { $0 + $1.utf8.count + 5 })
        func int32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
        int32(elements.isEmpty ? 0 : 1)  // dimensions
        int32(0)  // no NULL among them
        int32(element.rawValue)
        if !elements.isEmpty {
            int32(UInt32(elements.count))
            int32(1)  // the lower bound
        }
        let prefix: [UInt8] = element == .jsonb ? [1] : []
        for e in elements {
            int32(UInt32(prefix.count + e.utf8.count))
            bytes.append(contentsOf: prefix)
            bytes.append(contentsOf: e.utf8)
        }
        return .binary(bytes)
    }
}
