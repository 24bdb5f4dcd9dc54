import CSQLite
import SeamSchema
import SeamStore
import SeamTimers

extension ChannelBenchmarks {
    /// SQLite alone: the statements one seamd save of the latency benchmark runs — BEGIN
    /// IMMEDIATE, the Session INSERT, the sequence's upsert, COMMIT — on the same schema at the
    /// same durability, through SQLite's C API in the bench's own process: no messages, no
    /// channels, no JSON. What any broker that commits each save to SQLite pays for it, and so a
    /// bound under seamd's latency that seamd cannot go below.
    final class SQLiteAlone {
        let direct: DirectSQLite
        private let begin: OpaquePointer
        private let insert: OpaquePointer
        private let sequence: OpaquePointer
        private let commit: OpaquePointer
        private let columns: [Attribute]
        private var saves = 0

        /// `sync`: the WAL synced at every commit (`synchronous=FULL`, as seamd's full durability
        /// flushes it after each); otherwise written at commit and synced at checkpoints.
        init(work: String, sync: Bool) throws {
            direct = try DirectSQLite(path: work, schema: TimerApp.schema, synchronous: sync ? "FULL" : "NORMAL")
            guard let session = TimerApp.schema.entity("Session")?.entity else { throw BenchError("no Session entity") }
            columns = session.attributes
            begin = try direct.prepare("BEGIN IMMEDIATE")
            insert = try direct.prepare("INSERT INTO \"Session\" (\(columns.map { "\"\($0.name)\"" }.joined(separator: ", "))) VALUES ("
                                        + columns.indices.map { "?\($0 + 1)" }.joined(separator: ", ") + ")")
            try direct.exec("CREATE TABLE IF NOT EXISTS seam_store (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) STRICT")
            sequence = try direct.prepare(SaveJournal.setSequenceSQL)
            commit = try direct.prepare("COMMIT")
        }

        deinit { for s in [begin, insert, sequence, commit] { sqlite3_finalize(s) } }

        /// Seconds each one-row save transaction takes, bound and run as seamd's would be.
        func measure(rounds: Int) throws -> [Double] {
            var times: [Double] = []
            times.reserveCapacity(rounds)
            for _ in 0..<rounds {
                saves += 1
                let values: [String: AttributeValue] = ["uuid": .uuid(UUIDText.random()), "name": .string("target"),
                                                        "startedAt": .date(Double(1_700_000_000 + saves))]
                let t = Harness.now()
                try step(begin)
                for (k, a) in columns.enumerated() { direct.bind(insert, Int32(k + 1), values[a.name] ?? a.defaultValue ?? .null) }
                try step(insert)
                let arguments = SaveJournal.setSequenceArguments(Int64(saves))
                for (k, v) in arguments.enumerated() { direct.bind(sequence, Int32(k + 1), v) }
                try step(sequence)
                try step(commit)
                times.append(Double(Harness.now() - t) / 1e9)
            }
            return times
        }

        private func step(_ s: OpaquePointer) throws {
            defer { sqlite3_reset(s) }
            guard sqlite3_step(s) == SQLITE_DONE else { throw BenchError("SQLite alone: \(String(cString: sqlite3_errmsg(direct.db)))") }
        }
    }
}
