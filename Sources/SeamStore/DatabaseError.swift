import CSQLite
import SeamSystem

/// A SQLite result code, primary or extended, matched by kind: `case .constraint:` takes every
/// constraint failure (`SQLITE_CONSTRAINT_UNIQUE`, `_PRIMARYKEY`, …), `case .constraintUnique:`
/// only that one.
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code (the low byte of an extended one).
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xff) }

    public static let error = ResultCode(rawValue: SQLITE_ERROR)
    public static let busy = ResultCode(rawValue: SQLITE_BUSY)
    public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    public static let noMemory = ResultCode(rawValue: SQLITE_NOMEM)
    public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
    public static let interrupt = ResultCode(rawValue: SQLITE_INTERRUPT)
    public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
    public static let full = ResultCode(rawValue: SQLITE_FULL)
    public static let cantOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
    public static let permission = ResultCode(rawValue: SQLITE_PERM)
    public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)
    public static let constraintPrimaryKey = ResultCode(rawValue: SQLITE_CONSTRAINT | (6 << 8))
    public static let constraintUnique = ResultCode(rawValue: SQLITE_CONSTRAINT | (8 << 8))

    /// A primary pattern matches every code of its kind; an extended one, itself alone (the
    /// pattern first, as `switch` calls it).
    public static func ~= (pattern: ResultCode, code: ResultCode) -> Bool { code.matches(pattern) }

    /// Whether this code is `pattern`: of its kind when `pattern` is a primary code, else exactly it.
    public func matches(_ pattern: ResultCode) -> Bool {
        pattern.rawValue & ~0xff == 0 ? pattern.rawValue == rawValue & 0xff : pattern == self
    }

    /// The store file is damaged, or is not a database at all.
    public var isDamage: Bool { matches(.corrupt) || matches(.notADatabase) }

    public var description: String { "\(rawValue) (\(String(cString: sqlite3_errstr(rawValue))))" }
}

/// An error reported by SQLite, with everything needed to understand it.
///
/// `catch let e as DatabaseError where e.resultCode.matches(.constraint)` tells a constraint
/// violation apart from a full disk without parsing messages.
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

    /// The result code, typed: matched by kind (`case .constraint:`) or exactly.
    public var resultCode: ResultCode { ResultCode(rawValue: code) }

    /// The disk (or the file system's quota) is full, however SQLite worded it.
    public var isDiskFull: Bool { resultCode.matches(.full) || systemErrno == SystemError.noSpace }

    public var description: String {
        var s = "SQLite error \(code) (\(String(cString: sqlite3_errstr(code)))): \(message)"
        if systemErrno != 0 { s += " (\(SystemError("", errno: systemErrno).message))" }
        if let path { s += " [file \(path)]" }
        if let sql { s += " [SQL: \(sql.count > 300 ? String(sql.prefix(300)) + "…" : sql)]" }
        return s
    }
}
