import SeamSchema

/// The steps that bring a directory's store files to the current versions, inferred from the
/// versions they hold. Pure data: the planner makes it, the executor runs it, `--dry-run`
/// prints it.
public struct MigrationPlan: Sendable {
    /// Copying one entity's rows from an original file into the new copy.
    public struct Copy: Sendable {
        public var model: String
        /// The entity in the target version.
        public var entity: String
        /// Which original file the rows come from (differs from the target when an entity moved).
        public var sourceConfiguration: String
        public var sourceTable: String
        /// Target columns, and the SQL expression over the source row that fills each.
        public var columns: [String]
        public var expressions: [String]
        public var targetTypes: [AttributeType]
        /// Source columns, as custom stages see them.
        public var sourceColumns: [(name: String, type: AttributeType)]
        /// Custom stages to run on each row, oldest first; empty means a pure SQL copy.
        public var stages: [CustomStage]
        /// What happens, in words.
        public var notes: [String]

        /// The schema name of an attached original.
        static func schemaName(_ configuration: String) -> String { "src_\(configuration)" }

        /// `INSERT … SELECT` for the rows whose uuid lies in `(?1, ?2]` (or above `?1` when `bounded` is false).
        public func insertSQL(bounded: Bool) -> String {
            let q = SchemaSQL.quote
            return "INSERT INTO main.\(q(entity)) (\(columns.map(q).joined(separator: ", "))) SELECT "
                + expressions.joined(separator: ", ") + " FROM \(q(Self.schemaName(sourceConfiguration))).\(q(sourceTable))"
                + (bounded ? " WHERE \"uuid\" > ?1 AND \"uuid\" <= ?2" : " WHERE \"uuid\" > ?1")
        }

        /// The whole copy as one statement, for the dry-run listing.
        public var displaySQL: String {
            let q = SchemaSQL.quote
            if !stages.isEmpty {
                return "SELECT … FROM \(q(Self.schemaName(sourceConfiguration))).\(q(sourceTable)) ORDER BY uuid; "
                    + "then per row: \(stages.map(\.name).joined(separator: ", ")); INSERT INTO \(q(entity)) …"
            }
            return "INSERT INTO \(q(entity)) (\(columns.map(q).joined(separator: ", "))) SELECT "
                + expressions.joined(separator: ", ") + " FROM \(q(Self.schemaName(sourceConfiguration))).\(q(sourceTable))"
        }
    }

    /// Everything that happens to one store file.
    public struct FilePlan: Sendable {
        public var configuration: String
        /// How the file stands now, in words.
        public var from: String
        public var createTables: [String]
        public var copies: [Copy]
        public var createIndexes: [String]
        public var metadata: StoreMetadata
        /// Entities of the original that are dropped, and why, in words.
        public var dropped: [String]
        /// The original files this one reads from.
        public var sources: Set<String> { Set(copies.map(\.sourceConfiguration)) }
    }

    public var files: [FilePlan]

    public var isEmpty: Bool { files.isEmpty }

    /// The plan in words, each step with the SQL it runs.
    public var description: String {
        if files.isEmpty { return "Nothing to migrate: every store is current.\n" }
        var out = ""
        for f in files {
            out += "\(f.configuration).sqlite — \(f.from)\n"
            out += "  1. create a copy with the current tables:\n"
            for sql in f.createTables { out += "       \(sql);\n" }
            out += "  2. copy rows in batches ordered by uuid:\n"
            for c in f.copies {
                out += "     - \(c.model).\(c.entity) from \(c.sourceConfiguration).sqlite table \(c.sourceTable)"
                    + (c.notes.isEmpty ? "" : ": " + c.notes.joined(separator: "; ")) + "\n"
                out += "       \(c.displaySQL);\n"
            }
            for d in f.dropped { out += "     - \(d)\n" }
            out += "  3. build indexes:\n"
            for sql in f.createIndexes { out += "       \(sql);\n" }
            out += "  4. record " + f.metadata.models.map { "\($0.model) v\($0.version)" }.joined(separator: ", ")
                + " with their hashes and canonical JSON\n"
            out += "  5. verify the copy (quick_check, tables and indexes, row counts, hashes), keep the original in "
                + "backups/, swap the copy in\n"
        }
        return out
    }
}
