import CSQLite
import SeamSchema

/// A prepared statement; owns its handle and finalizes it in `deinit`.
public final class Statement {
    public let sql: String
    let database: Database
    let handle: OpaquePointer

    init(database: Database, sql: String) throws(DatabaseError) {
        self.database = database
        self.sql = sql
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw rc == SQLITE_OK
                ? DatabaseError(code: SQLITE_MISUSE, message: "no statement in SQL", sql: sql, path: database.path)
                : database.lastError(rc, sql: sql)
        }
        handle = stmt
    }

    deinit { sqlite3_finalize(handle) }

    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    public func columnName(_ index: Int) -> String { String(cString: sqlite3_column_name(handle, Int32(index))) }

    /// Resets the statement and binds `values` to its parameters `?1 … ?N`.
    public func bind(_ values: [AttributeValue]) throws(DatabaseError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    /// Binds one value to parameter `index` (from 1).
    public func bind(_ value: AttributeValue, at index: Int32) throws(DatabaseError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .integer(let i): rc = sqlite3_bind_int64(handle, index, i)
        case .bool(let b): rc = sqlite3_bind_int64(handle, index, b ? 1 : 0)
        case .double(let d), .date(let d): rc = sqlite3_bind_double(handle, index, d)
        case .string(let s), .uuid(let s), .json(let s):
            rc = sqlite3_bind_text64(handle, index, s, UInt64(s.utf8.count), seam_sqlite_transient(), UInt8(SQLITE_UTF8))
        case .binary(let bytes):
            rc = bytes.withUnsafeBytes { raw in
                sqlite3_bind_blob64(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(bytes.count),
                                    seam_sqlite_transient())
            }
        }
        try database.check(rc, sql: sql)
    }

    /// Advances to the next row: `true` when there is one, `false` when the statement is done.
    public func step() throws(DatabaseError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error = database.lastError(rc, sql: sql)
        sqlite3_reset(handle)
        throw error
    }

    /// Makes the statement ready to run again with the same bindings.
    public func reset() { sqlite3_reset(handle) }

    /// The value of column `index` of the current row, read as `type` (or as SQLite stored it).
    public func column(_ index: Int, as type: AttributeType?) -> AttributeValue {
        let i = Int32(index)
        let stored = sqlite3_column_type(handle, i)
        if stored == SQLITE_NULL { return .null }
        switch type {
        case .integer: return .integer(sqlite3_column_int64(handle, i))
        case .bool: return .bool(sqlite3_column_int64(handle, i) != 0)
        case .double: return .double(sqlite3_column_double(handle, i))
        case .date: return .date(sqlite3_column_double(handle, i))
        case .string: return .string(text(i))
        case .uuid: return .uuid(text(i))
        case .json: return .json(text(i))
        case .binary: return .binary(blob(i))
        case nil:
            switch stored {
            case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
            case SQLITE_FLOAT: return .double(sqlite3_column_double(handle, i))
            case SQLITE_BLOB: return .binary(blob(i))
            default: return .string(text(i))
            }
        }
    }

    private func text(_ i: Int32) -> String {
        guard let p = sqlite3_column_text(handle, i) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    private func blob(_ i: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(handle, i))
        guard n > 0, let p = sqlite3_column_blob(handle, i) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
