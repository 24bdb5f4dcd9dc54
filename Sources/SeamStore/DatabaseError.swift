import CSQLite
import SeamSystem

/// An error reported by SQLite, with everything needed to understand it.
///
/// `catch let e as DatabaseError where e.primaryCode == DatabaseError.constraint` tells a
/// constraint violation apart from a full disk without parsing messages.
public struct DatabaseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The extended result code (`sqlite3_extended_errcode`).
    public var code: Int32
    public var message: String
    /// The SQL being run, when there was one.
    public var sql: String?
    /// The database file, when known.
    public var path: String?
    /// The `errno` of the system call behind an I/O error (`sqlite3_system_errno`), 0 when none.
    /// SQLite reports some full disks as I/O errors (a `-shm` file that cannot grow is
    /// `SQLITE_IOERR_SHMSIZE`); this is what tells them apart.
    public var systemErrno: Int32

    public init(code: Int32, message: String, sql: String? = nil, path: String? = nil, systemErrno: Int32 = 0) {
        self.code = code
        self.message = message
        self.sql = sql
        self.path = path
        self.systemErrno = systemErrno
    }

    /// The primary result code (the low byte of the extended one).
    public var primaryCode: Int32 { code & 0xff }

    /// The disk (or the file system's quota) is full, however SQLite worded it.
    public var isDiskFull: Bool { primaryCode == Self.full || systemErrno == SystemError.noSpace }

    public static let error: Int32 = SQLITE_ERROR
    public static let busy: Int32 = SQLITE_BUSY
    public static let readOnly: Int32 = SQLITE_READONLY
    public static let ioError: Int32 = SQLITE_IOERR
    public static let corrupt: Int32 = SQLITE_CORRUPT
    public static let full: Int32 = SQLITE_FULL
    public static let cantOpen: Int32 = SQLITE_CANTOPEN
    public static let constraint: Int32 = SQLITE_CONSTRAINT
    public static let notADatabase: Int32 = SQLITE_NOTADB
    public static let interrupt: Int32 = SQLITE_INTERRUPT
    public static let noMemory: Int32 = SQLITE_NOMEM
    public static let permission: Int32 = SQLITE_PERM
    public static let locked: Int32 = SQLITE_LOCKED

    public var description: String {
        var s = "SQLite error \(code) (\(String(cString: sqlite3_errstr(code)))): \(message)"
        if systemErrno != 0 { s += " (\(SystemError("", errno: systemErrno).message))" }
        if let path { s += " [file \(path)]" }
        if let sql { s += " [SQL: \(sql.count > 300 ? String(sql.prefix(300)) + "…" : sql)]" }
        return s
    }
}
