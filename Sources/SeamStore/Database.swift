import CSQLite
import SeamSchema

/// How a store file's commits reach the disk.
public enum Durability: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: survives any process crash; a power cut may lose the last
    /// commits but never corrupts. The default.
    case normal
    /// WAL with `synchronous=FULL`: every commit is on disk before it returns.
    case full
}

/// One connection to one SQLite database. The only place that opens SQLite handles.
///
/// Not thread-safe: use a connection from one thread at a time (the store layers above
/// serialise access). Closing happens in `deinit` or through `close()`.
public final class Database {
    public struct Options: Sendable {
        public var readOnly = false
        public var create = true
        /// Journal mode WAL and this durability; ignored for read-only and in-memory databases.
        public var durability: Durability = .normal
        /// How long a statement waits for another connection's lock before `SQLITE_BUSY`.
        public var busyTimeoutMilliseconds: Int32 = 5000
        /// Use WAL (the default for store files); off for scratch copies written once.
        public var wal = true
        /// Accept `file:` URIs (for read-only attachments).
        public var uri = false
        public init() {}
    }

    public typealias Handle = OpaquePointer

    public let path: String
    let handle: Handle
    private var isClosed = false

    /// Opens (and by default creates) the database at `path`; `":memory:"` is an in-memory one.
    ///
    /// Wraps `sqlite3_open_v2`. The handle is closed again when opening or configuring fails.
    public init(path: String, options: Options = Options()) throws(DatabaseError) {
        self.path = path
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        if options.uri { flags |= SQLITE_OPEN_URI }
        if options.readOnly {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if options.create { flags |= SQLITE_OPEN_CREATE }
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard let db else { throw DatabaseError(code: rc, message: "out of memory opening the database", path: path) }
        if rc != SQLITE_OK {
            let message = String(cString: sqlite3_errmsg(db))
            let extended = sqlite3_extended_errcode(db)
            sqlite3_close_v2(db)
            throw DatabaseError(code: extended, message: message, path: path)
        }
        handle = db
        do {
            sqlite3_busy_timeout(db, options.busyTimeoutMilliseconds)
            _ = seam_sqlite_db_config_bool(db, SQLITE_DBCONFIG_DEFENSIVE, 1)
            if !options.readOnly && path != ":memory:" && options.wal {
                try execute("PRAGMA journal_mode=WAL")
                try execute("PRAGMA synchronous=\(options.durability == .full ? "FULL" : "NORMAL")")
                // Checkpoint every 4,000 pages (16 MiB of WAL) rather than 1,000: a page written by
                // many commits in between (the sequence, an index root) is copied back once, and
                // the checkpoint's fsync is paid a quarter as often. The WAL is cut back to 16 MiB.
                try execute("PRAGMA wal_autocheckpoint=4000")
                try execute("PRAGMA journal_size_limit=\(16 << 20)")
                // Read pages straight from the kernel's page cache rather than copying each one in
                // with pread: a fetch by uuid touches a handful of pages, and the copies were most
                // of its cost below SQLite. Address space only; the store stays the file it was.
                try execute("PRAGMA mmap_size=\(1 << 30)")
            }
        } catch {
            sqlite3_close_v2(db)
            isClosed = true
            throw error
        }
    }

    deinit {
        if !isClosed { sqlite3_close_v2(handle) }
    }

    /// Closes the connection now. Statements still alive keep it open until they are released.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        sqlite3_close_v2(handle)
    }

    // MARK: - Checking

    /// The one place that turns a SQLite result code into a Swift error.
    @discardableResult
    func check(_ rc: Int32, sql: String? = nil) throws(DatabaseError) -> Int32 {
        switch rc {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE: return rc
        default: throw lastError(rc, sql: sql)
        }
    }

    func lastError(_ rc: Int32, sql: String? = nil) -> DatabaseError {
        let extended = sqlite3_extended_errcode(handle)
        let code = (extended & 0xff) == (rc & 0xff) ? extended : rc
        return DatabaseError(code: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path)
    }

    // MARK: - Running SQL

    /// Runs one or more statements that take no arguments and return no rows.
    public func execute(_ sql: String) throws(DatabaseError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let message = err.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(err)
            throw DatabaseError(code: sqlite3_extended_errcode(handle), message: message, sql: sql, path: path)
        }
    }

    /// Prepares one statement.
    public func prepare(_ sql: String) throws(DatabaseError) -> Statement {
        try Statement(database: self, sql: sql)
    }

    /// Runs one statement with `arguments` and returns every row it produces.
    public func rows(_ sql: String, _ arguments: [AttributeValue] = [], types: [AttributeType?] = []) throws(DatabaseError)
        -> [[AttributeValue]]
    {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var out: [[AttributeValue]] = []
        while try statement.step() {
            out.append((0..<statement.columnCount).map { i in
                statement.column(i, as: i < types.count ? types[i] : nil)
            })
        }
        return out
    }

    /// Runs one statement with `arguments`, ignoring any rows.
    public func run(_ sql: String, _ arguments: [AttributeValue] = []) throws(DatabaseError) {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        while try statement.step() {}
    }

    /// The first column of the first row, or `.null`.
    public func scalar(_ sql: String, _ arguments: [AttributeValue] = []) throws(DatabaseError) -> AttributeValue {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        return try statement.step() ? statement.column(0, as: nil) : .null
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ kind: String = "IMMEDIATE", _ body: () throws -> T) throws -> T {
        try execute("BEGIN \(kind)")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if !isAutocommit { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Whether no transaction is open.
    public var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Total rows changed since the connection opened, for tests that prove nothing was written.
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// Asks a running statement to stop at its next opportunity (`SQLITE_INTERRUPT`).
    public func interrupt() { sqlite3_interrupt(handle) }

    /// A `file:` URI that opens `path` read-only, for `ATTACH` on a connection opened with `uri`.
    public static func readOnlyURI(_ path: String) -> String {
        var out = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                out += "%" + Hex.encode([byte])
            }
        }
        return out + "?mode=ro"
    }

    /// The version of the SQLite library in use.
    public static var sqliteVersion: String { String(cString: sqlite3_libversion()) }
}
