import SeamSchema
import SeamSystem

/// Makes one save across two store files all-or-nothing, as seen after any crash.
///
/// SQLite commits each WAL file atomically, but not two files as a set. A save that touches both
/// commits the first file together with an intent — the second file's operations, as final row
/// values — and then commits the second file, which records the save's sequence number. If the
/// process dies between the two commits, the next open finds the intent, sees that the second
/// file's sequence is older than the intent's, and replays the operations (they are idempotent:
/// whole rows written with `INSERT OR REPLACE`, deletes by uuid). Then the intent is deleted.
public enum SaveJournal {
    /// One row operation: the row's full values, or a delete when `values` is nil.
    public struct Operation: Sendable, Hashable {
        public var table: String
        public var uuid: String
        public var values: [String: AttributeValue]?
        public init(table: String, uuid: String, values: [String: AttributeValue]?) {
            self.table = table
            self.uuid = uuid
            self.values = values
        }
    }

    static let createSQL =
        "CREATE TABLE IF NOT EXISTS seam_intent (sequence INTEGER NOT NULL PRIMARY KEY, target TEXT NOT NULL, ops TEXT NOT NULL) STRICT"

    /// The key in `seam_store` that holds the sequence number of the file's last save.
    public static let sequenceKey = "sequence"

    /// Records, inside the caller's transaction on the first file, the operations the save will
    /// apply to `target`.
    public static func record(_ operations: [Operation], sequence: Int64, target: String, in db: Database) throws(DatabaseError) {
        try db.execute(createSQL)
        try db.run("INSERT OR REPLACE INTO seam_intent (sequence, target, ops) VALUES (?, ?, ?)",
                   [.integer(sequence), .string(target), .string(encode(operations))])
    }

    /// Forgets the intent of save `sequence`, once the second file has committed.
    public static func clear(_ sequence: Int64, in db: Database) throws(DatabaseError) {
        try db.run("DELETE FROM seam_intent WHERE sequence = ?", [.integer(sequence)])
    }

    /// Applies `operations` and the save's sequence number inside the caller's transaction.
    public static func apply(_ operations: [Operation], sequence: Int64, to db: Database) throws(DatabaseError) {
        for op in operations {
            if let values = op.values {
                let keys = values.keys.sorted()
                try db.run("INSERT OR REPLACE INTO \(SchemaSQL.quote(op.table)) (\(keys.map(SchemaSQL.quote).joined(separator: ", "))) "
                           + "VALUES (" + keys.indices.map { "?\($0 + 1)" }.joined(separator: ", ") + ")", keys.map { values[$0] ?? .null })
            } else {
                try db.run("DELETE FROM \(SchemaSQL.quote(op.table)) WHERE \"uuid\" = ?", [.string(op.uuid)])
            }
        }
        try setSequence(sequence, in: db)
    }

    /// The sequence number of the last save a file committed (0 when none).
    public static func sequence(in db: Database) throws(DatabaseError) -> Int64 {
        let v = try db.scalar("SELECT value FROM seam_store WHERE key = ?", [.string(sequenceKey)])
        return Int64(v.stringValue ?? "") ?? 0
    }

    public static func setSequence(_ sequence: Int64, in db: Database) throws(DatabaseError) {
        try db.run(setSequenceSQL, setSequenceArguments(sequence))
    }

    /// The statement and arguments of `setSequence`, for callers that keep it prepared. An upsert,
    /// not `INSERT OR REPLACE`: a replace deletes the row and inserts it again, which rewrites the
    /// key's index page as well as the table's, one more page (4 KB more WAL to write and sync) in
    /// every commit; an update of the value leaves the index alone.
    public static let setSequenceSQL =
        "INSERT INTO seam_store (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    public static func setSequenceArguments(_ sequence: Int64) -> [AttributeValue] {
        [.string(sequenceKey), .string(String(sequence))]
    }

    /// Finishes every save a crash interrupted in the directory's stores; returns how many. A save
    /// whose other file is not one `replayable` accepts (a newer build's, unknown, damaged) is
    /// left for a later open: that file is refused untouched, and its rows wait with the intent.
    public static func replay(
        layout: StoreLayout, configurations: [String], replayable: (String) -> Bool = { _ in true }
    ) throws(StoreError) -> Int {
        var replayed = 0
        for configuration in configurations {
            let path = layout.store(configuration)
            guard FileSystem.exists(path), hasIntents(path) else { continue }
            var unreadable: (sequence: Int64, target: String)?
            do {
                let db = try Database(path: path, options: { var o = Database.Options(); o.create = false; return o }())
                let intents = try db.rows("SELECT sequence, target, ops FROM seam_intent ORDER BY sequence",
                                          types: [.integer, .string, .string])
                for intent in intents {
                    guard let sequence = intent[0].integerValue, let target = intent[1].stringValue, replayable(target) else { continue }
                    guard let operations = decode(intent[2].stringValue ?? "") else {
                        // Kept, and nothing opens: replaying less than the save would lose its rows.
                        unreadable = (sequence, target)
                        break
                    }
                    let targetDB = try Database(path: layout.store(target), options: { var o = Database.Options(); o.create = false; return o }())
                    if try Self.sequence(in: targetDB) < sequence {
                        try targetDB.execute("BEGIN IMMEDIATE")
                        try apply(operations, sequence: sequence, to: targetDB)
                        try targetDB.execute("COMMIT")
                        targetDB.flushWAL()  // on the disk before the intent goes, whatever the durability
                        replayed += 1
                    }
                    try clear(sequence, in: db)
                }
            } catch {
                throw StoreError(.database(error), path: path)
            }
            if let (sequence, target) = unreadable {
                throw StoreError(.unknown(detail: """
                    its record of save \(sequence), to finish in \(target).sqlite after a crash, cannot be read; \
                    both files are left as they are. Restore them from a backup, or move both aside to start afresh
                    """), path: path)
            }
        }
        return replayed
    }

    /// Whether the file at `path` holds intents, read without writing. Anything unreadable
    /// answers no: classification, not recovery, reports damaged files.
    private static func hasIntents(_ path: String) -> Bool {
        var o = Database.Options()
        o.readOnly = true
        guard let db = try? Database(path: path, options: o),
              (try? db.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'seam_intent'").integerValue) == 1
        else { return false }
        return ((try? db.scalar("SELECT count(*) FROM seam_intent").integerValue) ?? 0) > 0
    }

    // MARK: - Encoding

    /// Values are typed pairs so that replay binds exactly what was meant:
    /// `["s", text]`, `["i", "123"]`, `["r", "1.5"]` (bit-exact hex), `["b", base64]`, or `null`.
    static func encode(_ operations: [Operation]) -> String {
        JSONValue.array(operations.map { op in
            var members: [(String, JSONValue)] = [("table", .string(op.table)), ("uuid", .string(op.uuid))]
            if let values = op.values {
                members.append(("values", .object(values.map { ($0.key, encodeValue($0.value)) })))
            }
            return .object(members)
        }).minified
    }

    /// The operations `encode` wrote, or nil when the text is not such a list (damaged): every
    /// operation and value is read exactly, or nothing is.
    static func decode(_ text: String) -> [Operation]? {
        guard let items = (try? JSONText.parse(text))?.arrayValue else { return nil }
        var operations: [Operation] = []
        for item in items {
            guard let table = item["table"]?.stringValue, let uuid = item["uuid"]?.stringValue else { return nil }
            var values: [String: AttributeValue]?
            if let v = item["values"] {
                guard let members = v.objectValue else { return nil }
                var row: [String: AttributeValue] = [:]
                for (name, encoded) in members {
                    guard let value = decodeValue(encoded), row.updateValue(value, forKey: name) == nil else { return nil }
                }
                values = row
            }
            operations.append(Operation(table: table, uuid: uuid, values: values))
        }
        return operations
    }

    private static func encodeValue(_ v: AttributeValue) -> JSONValue {
        switch v {
        case .null: return .null
        case .string(let s), .uuid(let s), .json(let s): return .array([.string("s"), .string(s)])
        case .integer(let i): return .array([.string("i"), .string(String(i))])
        case .bool(let b): return .array([.string("i"), .string(b ? "1" : "0")])
        case .double(let d), .date(let d): return .array([.string("r"), .string(String(d.bitPattern, radix: 16))])
        case .binary(let bytes): return .array([.string("b"), .string(Base64.encode(bytes))])
        }
    }

    private static func decodeValue(_ j: JSONValue) -> AttributeValue? {
        if case .null = j { return .null }
        guard let pair = j.arrayValue, pair.count == 2, let tag = pair[0].stringValue, let text = pair[1].stringValue else {
            return nil
        }
        switch tag {
        case "s": return .string(text)
        case "i": return Int64(text).map(AttributeValue.integer)
        case "r": return UInt64(text, radix: 16).map { .double(Double(bitPattern: $0)) }
        case "b": return Base64.decode(text).map(AttributeValue.binary)
        default: return nil
        }
    }
}
