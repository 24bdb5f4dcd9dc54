import CSQLite
import SeamSchema
import SeamSystem

/// How a store file's commits reach the disk.
public enum Durability: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: survives any process crash; a power cut may lose the last
    /// commits but never corrupts. The default.
    case normal
    /// Every commit is on the disk before anyone is told of it. The connection flushes the WAL
    /// itself (`FileFlusher`) rather than through `synchronous=FULL`: after each commit, or, for
    /// commits made while `Database.defersSync` is set, when the owner calls `syncDeferred()` —
    /// so that it can work out what to tell while the disk takes the commit.
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
        /// Read pages through a memory map (WAL connections only): the served stores' reads. Off
        /// for a connection that reads a whole file once (a migration's copy, a check): every page
        /// it touches would count in the process's resident memory.
        public var memoryMapped = true
        public init() {}
    }

    public typealias Handle = OpaquePointer

    public let path: String
    let handle: Handle
    private var isClosed = false
    /// `Durability.full` in WAL mode: flushes the WAL after commits (SQLite's own syncing is off).
    private let walFlusher: FileFlusher?
    /// The WAL's path, when the connection writes through one.
    let walPath: String?
    /// The deadline `limitRunningTime` set, kept alive while its handler may read it.
    private var progressDeadline: DeadlineBox?
    /// `flushWAL`'s flusher on a connection that does not flush every commit (made on first use).
    private var ownFlusher: FileFlusher?
    /// While set, a commit only starts its WAL's writeback, and the owner must call
    /// `syncDeferred()` before it tells anyone of the commit (no effect unless durability is full).
    public var defersSync = false
    /// Whether a commit made while `defersSync` was set awaits `syncDeferred()`.
    public private(set) var syncPending = false
    /// How often this connection has flushed its WAL.
    public private(set) var walSyncs = 0
    /// Called after each commit with the frames now in the WAL (the checkpointer's trigger).
    var walObserver: ((Int, Handle) -> Void)?
    /// WAL frames after which a commit checkpoints on this connection (PASSIVE), as SQLite's
    /// `wal_autocheckpoint` would (0: never). 4,000 pages (16 MiB of WAL) rather than SQLite's
    /// 1,000: a page written by many commits in between (the sequence, an index root) is copied
    /// back once, and the checkpoint's fsync is paid a quarter as often.
    public var autoCheckpointFrames = 4000

    /// Opens (and by default creates) the database at `path`; `":memory:"` is an in-memory one.
    ///
    /// Wraps `sqlite3_open_v2`. The handle is closed again when opening or configuring fails.
    public init(path: String, options: Options = Options()) throws(DatabaseError) {
        _ = Self.configured
        self.path = path
        // SQLite would block opening a FIFO (until a writer came), and read a device as a file.
        let file = options.uri ? Self.filePath(ofURI: path) : path
        if file != ":memory:", let kind = FileSystem.kind(file), kind != "file", kind != "link" {
            throw DatabaseError(code: SQLITE_CANTOPEN, message: "\(file) is a \(kind), not a database file", path: path)
        }
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
            let error = DatabaseError(code: extended, message: message, path: path, systemErrno: Self.systemErrno(extended, db))
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        let wal = !options.readOnly && path != ":memory:" && options.wal
        walPath = wal ? String(cString: sqlite3_filename_wal(sqlite3_db_filename(db, "main"))) : nil
        walFlusher = options.durability == .full ? walPath.map(FileFlusher.init(path:)) : nil
        do {
            sqlite3_busy_timeout(db, options.busyTimeoutMilliseconds)
            _ = seam_sqlite_db_config_bool(db, SQLITE_DBCONFIG_DEFENSIVE, 1)
            // A double-quoted name that is no column is an error, not a string literal: with the
            // fallback on, a store missing a column read back that column's name as every row's
            // value (a migration copied it into the new store as data).
            _ = seam_sqlite_db_config_bool(db, SQLITE_DBCONFIG_DQS_DML, 0)
            _ = seam_sqlite_db_config_bool(db, SQLITE_DBCONFIG_DQS_DDL, 0)
            try check(SQLFunctions.register(on: db))
            if wal {
                try execute("PRAGMA journal_mode=WAL")
                // NORMAL for both: with full durability, the WAL hook below flushes each commit.
                // (SQLite syncs the WAL before every checkpoint and the file after it either way.)
                try execute("PRAGMA synchronous=NORMAL")
                // The WAL is cut back to 16 MiB after a checkpoint (see `autoCheckpointFrames`).
                try execute("PRAGMA journal_size_limit=\(16 << 20)")
                // Read pages straight from the kernel's page cache rather than copying each one in
                // with pread: a fetch by uuid touches a handful of pages, and the copies were most
                // of its cost below SQLite. Address space only; the store stays the file it was.
                if options.memoryMapped { try execute("PRAGMA mmap_size=\(1 << 30)") }
                // This connection's own WAL hook replaces SQLite's automatic checkpoint (which is
                // a WAL hook too: setting `PRAGMA wal_autocheckpoint` would remove this one).
                sqlite3_wal_hook(db, { context, _, _, frames in
                    Unmanaged<Database>.fromOpaque(context!).takeUnretainedValue().committed(frames: Int(frames))
                    return SQLITE_OK
                }, Unmanaged.passUnretained(self).toOpaque())
            }
        } catch {
            sqlite3_close_v2(db)
            isClosed = true
            throw error
        }
    }

    deinit {
        if !isClosed { close() }
    }

    /// SQLite's process-wide settings, made once before the first connection opens: no memory
    /// statistics (Seam never reads them, and keeping them takes a global mutex on every
    /// allocation SQLite makes: a few dozen per save).
    private static let configured: Bool = seam_sqlite_config_memstatus(0) == SQLITE_OK

    /// Closes the connection now. Statements still alive keep it open until they are released.
    public func close() {
        guard !isClosed else { return }
        syncDeferred()
        isClosed = true
        sqlite3_wal_hook(handle, nil, nil)
        sqlite3_close_v2(handle)
    }

    // MARK: - Flushing the WAL (Durability.full)

    /// The WAL hook, after each commit of this connection.
    private func committed(frames: Int) {
        if let walFlusher {
            if defersSync {
                // The first commit since the last sync starts the disk on it; the ones after it
                // (a group commit) are left for the sync, not submitted one by one.
                if !syncPending { walFlusher.startWriteback() }
                syncPending = true
            } else {
                flush(walFlusher)
            }
        }
        walObserver?(frames, handle)
        if autoCheckpointFrames > 0, frames >= autoCheckpointFrames {
            _ = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        }
    }

    /// Puts every commit of this connection so far on the disk, whatever its durability: for the
    /// commits that another file's consistency rests on (a two-file save's intent, a replayed
    /// save). Nothing to do without a WAL (in memory, read-only, or not in WAL mode). A flush
    /// that fails ends the process, as after any commit with full durability (`syncFailed`).
    public func flushWAL() {
        guard let walPath else { return }
        let flusher: FileFlusher
        if let walFlusher {
            flusher = walFlusher
        } else if let ownFlusher {
            flusher = ownFlusher
        } else {
            flusher = FileFlusher(path: walPath)
            ownFlusher = flusher
        }
        flush(flusher)
    }

    /// Puts on the disk the commits made while `defersSync` was set (nothing when none awaits).
    public func syncDeferred() {
        guard syncPending, let walFlusher else { return }
        flush(walFlusher)
    }

    private func flush(_ flusher: FileFlusher) {
        do { try flusher.sync() } catch { Self.syncFailed(error) }
        syncPending = false  // a flush covers every commit before it
        walSyncs += 1
    }

    /// A WAL that could not be flushed ends the process, as a failed fsync makes PostgreSQL stop:
    /// the commit is in the WAL, but after a failed flush the kernel may have dropped its pages,
    /// so no answer that depends on it can be given. On the next open, SQLite recovers what
    /// reached the disk.
    private static func syncFailed(_ error: SystemError) -> Never {
        let message = "fatal: \(error): a commit may not be on the disk, and nobody has been told of it. Stopping; "
            + "on the next start the store recovers what reached the disk. Check the disk (dmesg) first.\n"
        Processes.stop(message, status: 74)
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
        return DatabaseError(code: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path,
                             systemErrno: Self.systemErrno(code, handle))
    }

    /// The `errno` behind an I/O-kind failure on `db`; 0 for the others, whose `errno` is stale.
    private static func systemErrno(_ code: Int32, _ db: Handle) -> Int32 {
        switch code & 0xff {
        case SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN: return sqlite3_system_errno(db)
        default: return 0
        }
    }

    // MARK: - Running SQL

    /// Runs one or more statements that take no arguments and return no rows.
    public func execute(_ sql: String) throws(DatabaseError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let message = err.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(err)
            let code = sqlite3_extended_errcode(handle)
            throw DatabaseError(code: code, message: message, sql: sql, path: path, systemErrno: Self.systemErrno(code, handle))
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

    /// The first bytes of the main database file, at most `count`, read through SQLite's own
    /// handle of it. Opening and closing the file any other way would drop every lock SQLite
    /// holds on it in this process (POSIX locks belong to the process, and any close of the
    /// file releases them): another process closing its last connection would then take the
    /// store for unused, fold its WAL in and delete it while seamd still writes there.
    public func fileHeader(count: Int) throws(DatabaseError) -> [UInt8] {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
              let methods = file.pointee.pMethods, let read = methods.pointee.xRead, let sizeOf = methods.pointee.xFileSize
        else { throw DatabaseError(code: SQLITE_CANTOPEN, message: "the database file is not open", path: path) }
        var size: sqlite3_int64 = 0
        var rc = sizeOf(file, &size)
        guard rc == SQLITE_OK else { throw DatabaseError(code: rc, message: "cannot tell the file's size", path: path) }
        var bytes = [UInt8](repeating: 0, count: max(0, min(count, Int(size))))
        rc = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, Int32($0.count), 0) }
        guard rc == SQLITE_OK else { throw DatabaseError(code: rc, message: "cannot read the file's header", path: path) }
        return bytes
    }

    /// Whether no transaction is open.
    public var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Whether the main database can only be read: opened so, or SQLite fell back to reading
    /// because the file cannot be written (its permissions, a read-only mount).
    public var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// Pages in the main database (its size over its page size).
    public var pageCount: Int { Int((try? scalar("PRAGMA page_count").integerValue) ?? 0) }

    // MARK: - Whole-database work: copies and checks

    /// Copies the main database, as this connection sees it (the snapshot of a read transaction
    /// it holds, or the latest commit), into a new file at `path`, through SQLite's backup API:
    /// `pagesPerStep` pages at a time, `progress(done, total)` after each step. The file is
    /// flushed and whole when this returns; on failure it is removed.
    public func backup(to path: String, pagesPerStep: Int32 = 16384, progress: (Int, Int) -> Void = { _, _ in }) throws(DatabaseError) {
        var options = Options()
        options.wal = false
        let destination = try Database(path: path, options: options)
        do throws(DatabaseError) {
            // A new file nobody reads until it is whole: no journal, no syncs but the one at the end.
            try destination.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF")
            guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
                throw destination.lastError(sqlite3_errcode(destination.handle))
            }
            var rc: Int32 = SQLITE_OK
            while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED {
                rc = sqlite3_backup_step(backup, pagesPerStep)
                let total = Int(sqlite3_backup_pagecount(backup))
                progress(total - Int(sqlite3_backup_remaining(backup)), total)
                if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { Threads.sleep(0.005) }
            }
            let finished = sqlite3_backup_finish(backup)
            guard rc == SQLITE_DONE, finished == SQLITE_OK else { throw destination.lastError(rc == SQLITE_DONE ? finished : rc) }
            destination.close()
            do { try FileSystem.sync(path) } catch {
                throw DatabaseError(code: SQLITE_IOERR, message: "cannot flush the copy: \(error)", path: path)
            }
        } catch {
            destination.close()
            try? StoreLayout.removeDatabase(path)
            throw error
        }
    }

    /// SQLite's own check of the main database: `quick_check` (pages and their structure, in
    /// about a tenth of the time) or `integrity_check` (also every index against its table).
    /// Returns the problems found, at most `limit` (empty: the check passed). `progress` is
    /// called now and then with the virtual-machine steps run so far, in thousands.
    public func check(quick: Bool, limit: Int = 20, progress: ((Int) -> Void)? = nil) throws(DatabaseError) -> [String] {
        final class Ticks {
            var count = 0
            var report: ((Int) -> Void)?
        }
        let ticks = Ticks()
        ticks.report = progress
        if progress != nil {
            sqlite3_progress_handler(handle, 1000, { context in
                let t = Unmanaged<Ticks>.fromOpaque(context!).takeUnretainedValue()
                t.count += 1
                if t.count % 64 == 0 { t.report?(t.count) }
                return 0
            }, Unmanaged.passUnretained(ticks).toOpaque())
        }
        defer { if progress != nil { sqlite3_progress_handler(handle, 0, nil, nil) } }
        let found = try rows("PRAGMA \(quick ? "quick_check" : "integrity_check")(\(max(1, limit)))").compactMap { $0.first?.stringValue }
        return found == ["ok"] ? [] : found
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Total rows changed since the connection opened, for tests that prove nothing was written.
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// A limit on how long the statements of this connection may run: past `deadline` (seconds on
    /// the monotonic clock) a running statement stops with `SQLITE_INTERRUPT`, checked every few
    /// thousand virtual-machine steps. Nil: no limit.
    public func limitRunningTime(until deadline: Double?) {
        guard let deadline else {
            sqlite3_progress_handler(handle, 0, nil, nil)
            progressDeadline = nil
            return
        }
        let box = progressDeadline ?? DeadlineBox()
        box.deadline = deadline
        progressDeadline = box
        sqlite3_progress_handler(handle, 4000, { context in
            Unmanaged<DeadlineBox>.fromOpaque(context!).takeUnretainedValue().passed ? 1 : 0
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// What the progress handler of `limitRunningTime` looks at.
    private final class DeadlineBox {
        var deadline = 0.0
        var passed: Bool { WallClock.monotonic() > deadline }
    }

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

    /// The file a `file:` URI names (percent escapes decoded, the query left off); anything
    /// else as it is.
    static func filePath(ofURI uri: String) -> String {
        guard uri.hasPrefix("file:") else { return uri }
        let path = uri.dropFirst(5).prefix { $0 != "?" && $0 != "#" }
        var bytes: [UInt8] = []
        var it = Array(path.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "%"), it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(v)
                it = it.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The version of the SQLite library in use.
    public static var sqliteVersion: String { String(cString: sqlite3_libversion()) }
}
