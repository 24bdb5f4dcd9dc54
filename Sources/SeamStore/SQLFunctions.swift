import CSQLite
import SeamQuery

/// The SQL functions every connection has.
///
/// `seam_like(pattern, text, folded)`: whether `text` matches the LIKE `pattern` (ASCII-folded
/// when `folded` is 1), by the broker's own matcher, which never backtracks; NULL when `text`
/// is NULL. The pattern is parsed once per statement (SQLite keeps it beside the argument).
enum SQLFunctions {
    static func register(on db: OpaquePointer) -> Int32 {
        sqlite3_create_function_v2(db, "seam_like", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
                                   seamLike, nil, nil, nil)
    }
}

private func seamLike(_ context: OpaquePointer?, _ count: Int32, _ arguments: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let context, count == 3, let arguments else { return }
    guard sqlite3_value_type(arguments[1]) != SQLITE_NULL else {
        sqlite3_result_null(context)
        return
    }
    let matcher: LikeMatcher
    if let kept = sqlite3_get_auxdata(context, 0) {
        matcher = Unmanaged<LikeMatcher>.fromOpaque(kept).takeUnretainedValue()
    } else {
        guard let text = sqlite3_value_text(arguments[0]),
              let parsed = LikeMatcher(pattern: String(cString: text), folded: sqlite3_value_int(arguments[2]) != 0)
        else {
            sqlite3_result_error(context, "seam_like: not a LIKE pattern", -1)
            return
        }
        matcher = parsed
        // SQLite releases it when the statement no longer needs it (or at once, if it cannot keep it).
        sqlite3_set_auxdata(context, 0, Unmanaged.passRetained(parsed).toOpaque()) { kept in
            if let kept { Unmanaged<LikeMatcher>.fromOpaque(kept).release() }
        }
    }
    let bytes = sqlite3_value_text(arguments[1])
    let length = Int(sqlite3_value_bytes(arguments[1]))
    let matched = matcher.matches(UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : length))
    sqlite3_result_int(context, matched ? 1 : 0)
}
