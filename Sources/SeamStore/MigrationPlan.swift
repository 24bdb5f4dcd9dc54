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
        /// For each of `stages`, in order: the names the stage's own version gave the target's
        /// attributes, where they differ from today's. A stage reads and assigns the row under
        /// its version's names, however the attributes were renamed after it.
        public var stageNames: [[String: String]]
        /// What happens, in words.
        public var notes: [String]
        /// The entity as the original holds it, and as the target version defines it.
        public var sourceEntity: Entity
        public var targetEntity: Entity

        /// The schema name of an attached original.
        static func schemaName(_ configuration: String) -> String { "src_\(configuration)" }

        /// The stages that run as SQL, oldest first.
        var sqlStages: [CustomStage] { stages.filter { $0.assignments != nil } }
        /// The stages that run in Swift, row by row, after the SQL ones.
        public var swiftStages: [CustomStage] { stages.filter { $0.transform != nil } }
        /// The statements run once every row is copied, before the indexes (oldest first).
        public var afterCopy: [String] { stages.compactMap(\.afterCopySQL) }

        /// `SELECT` of one batch of mapped rows: the target columns (after SQL stages), then the
        /// source columns as `"old.NAME"`, for rows with uuid above `?1`, in uuid order.
        public func selectSQL(batch: Int?) -> String {
            let q = SchemaSQL.quote
            var mapped = zip(columns, expressions).map { "\($1) AS \(q($0))" }
            mapped += sourceColumns.map { "\(q($0.name)) AS \(q("old." + $0.name))" }
            var select = "SELECT " + mapped.joined(separator: ", ")
                + " FROM \(q(Self.schemaName(sourceConfiguration))).\(q(sourceTable))"
                + (batch.map { " WHERE \"uuid\" > ?1 ORDER BY \"uuid\" LIMIT \($0)" } ?? "")
            let passThrough = sourceColumns.map { q("old." + $0.name) }
            for (stage, names) in zip(stages, stageNames) {
                guard let assignments = stage.assignments else { continue }
                if !names.isEmpty {
                    // The row under the stage's names first.
                    let renamed = columns.map { "\(q($0)) AS \(q(Self.name(of: $0, in: names)))" } + passThrough
                    select = "SELECT " + renamed.joined(separator: ", ") + " FROM (\(select))"
                }
                let outputs = columns.map { c in
                    let name = Self.name(of: c, in: names)
                    return (assignments[name].map { "(\($0))" } ?? q(name)) + " AS \(q(c))"
                } + passThrough
                select = "SELECT " + outputs.joined(separator: ", ") + " FROM (\(select))"
            }
            return select
        }

        /// Runs the Swift stages on one row: `old` as the store held it, `new` the mapped row
        /// (by today's names), which each stage sees and changes under its own version's names.
        public func runSwiftStages(old: RowSnapshot, new: inout RowSnapshot) throws {
            for (stage, names) in zip(stages, stageNames) {
                guard let transform = stage.transform else { continue }
                if names.isEmpty {
                    try transform(old, &new)
                    continue
                }
                var seen = RowSnapshot()
                for c in columns { seen[Self.name(of: c, in: names)] = new[c] }
                try transform(old, &seen)
                for c in columns { new[c] = seen[Self.name(of: c, in: names)] }
            }
        }

        /// What a stage calls today's attribute `column`: its name in the stage's version, or
        /// its own, unless that version gave the name to another attribute (renamed since), in
        /// which case the stage cannot see it.
        private static func name(of column: String, in names: [String: String]) -> String {
            if let then = names[column] { return then }
            return names.values.contains(column) ? "new." + column : column
        }

        /// `INSERT … SELECT` of one batch (or of everything, when `batch` is nil).
        public func insertSQL(batch: Int?) -> String {
            let q = SchemaSQL.quote
            return "INSERT INTO main.\(q(entity)) (\(columns.map(q).joined(separator: ", "))) SELECT "
                + columns.map(q).joined(separator: ", ") + " FROM (\(selectSQL(batch: batch)))"
        }

        /// The whole copy as one statement, for the dry-run listing.
        public var displaySQL: String {
            if swiftStages.isEmpty, sqlStages.isEmpty {
                let q = SchemaSQL.quote
                return "INSERT INTO \(q(entity)) (\(columns.map(q).joined(separator: ", "))) SELECT "
                    + expressions.joined(separator: ", ") + " FROM \(q(Self.schemaName(sourceConfiguration))).\(q(sourceTable))"
            }
            var sql = insertSQL(batch: nil)
            if !swiftStages.isEmpty { sql += "; per row in Swift: " + swiftStages.map(\.name).joined(separator: ", ") }
            return sql
        }
    }

    /// Everything that happens to one store file.
    public struct FilePlan: Sendable {
        /// How the copy is made.
        public enum Method: Sendable, Equatable {
            /// A new file, tables created and rows copied in batches.
            case rebuild
            /// A byte copy of the original, changed with these `ALTER`, `CREATE` and `DROP`
            /// statements: for changes that only add (attributes, tables, indexes) or rename
            /// columns. The result is verified to have exactly the shape a rebuild would give.
            case alter([String])
        }

        public var configuration: String
        public var method: Method = .rebuild
        /// How the file stands now, in words.
        public var from: String
        /// Model name → the version the file holds now (absent: not in the file yet).
        public var fromVersions: [String: Int] = [:]

        /// "Local: Timers v4 → v5": the change in versions, in words.
        public var versionChange: String {
            configuration + ": " + metadata.models.map { m in
                "\(m.model) " + (fromVersions[m.model].map { "v\($0) → " } ?? "new at ") + "v\(m.version)"
            }.joined(separator: ", ")
        }
        public var createTables: [String]
        public var copies: [Copy]
        public var createIndexes: [String]
        public var metadata: StoreMetadata
        /// Entities of the original that are dropped, and why, in words.
        public var dropped: [String]
        /// What the original holds that is not Seam's, carried into the copy unchanged (each
        /// with the SQL the copy holds it by: a rename of a column it names rewrites it).
        public var carried: [ForeignObject] = []
        /// The original files this one reads from.
        public var sources: Set<String> { Set(copies.map(\.sourceConfiguration)) }
    }

    public var files: [FilePlan]

    public var isEmpty: Bool { files.isEmpty }

    /// The attributes whose transformer a file's plan changes (`encrypted` added or taken off),
    /// which change no row.
    static func transformerChanges(_ f: FilePlan) -> [(entity: String, attribute: String, transformer: Attribute.Transformer?)] {
        var out: [(entity: String, attribute: String, transformer: Attribute.Transformer?)] = []
        for c in f.copies {
            for t in c.targetEntity.attributes {
                let s = c.sourceEntity.attributes.first { $0.name == (t.renamingIdentifier ?? t.name) || $0.name == t.name }
                if let s, s.transformer != t.transformer { out.append((c.entity, t.name, t.transformer)) }
            }
        }
        return out
    }

    /// The plan in words, each step with the SQL it runs.
    public var description: String {
        if files.isEmpty { return "Nothing to migrate: every store is current.\n" }
        var out = ""
        for f in files {
            out += "\(f.configuration).sqlite — \(f.from)\n"
            if case .alter(let statements) = f.method {
                out += "  1. copy the file as it is (only additions and renames: no rows need rewriting)\n"
                out += statements.isEmpty ? "  2. no table changes: the shape on disk stays as it is\n" : "  2. change the copy in place:\n"
                for sql in statements { out += "       \(sql);\n" }
                for (entity, attribute, transformer) in Self.transformerChanges(f) {
                    out += "       \(entity).\(attribute): " + (transformer.map { "now \($0.rawValue): kept in clear here, sealed by sync for the server" }
                                                            ?? "no longer encrypted: sync sends it in clear") + "\n"
                }
                out += "  3. record " + f.metadata.models.map { "\($0.model) v\($0.version)" }.joined(separator: ", ")
                    + " with their hashes and canonical JSON\n"
                out += carriedDescription(f, byCopy: true)
                out += "  4. verify the copy (quick_check, tables and indexes as a fresh store's\(f.carried.isEmpty ? "" : " and what it keeps"), "
                    + "hashes), keep the original in backups/, swap the copy in\n"
                continue
            }
            out += "  1. create a copy with the current tables:\n"
            for sql in f.createTables { out += "       \(sql);\n" }
            out += "  2. copy rows in batches ordered by uuid:\n"
            for c in f.copies {
                out += "     - \(c.model).\(c.entity) from \(c.sourceConfiguration).sqlite table \(c.sourceTable)"
                    + (c.notes.isEmpty ? "" : ": " + c.notes.joined(separator: "; ")) + "\n"
                out += "       \(c.displaySQL);\n"
            }
            for d in f.dropped { out += "     - \(d)\n" }
            for c in f.copies where !c.afterCopy.isEmpty {
                out += "     then, over all of \(c.entity):\n"
                for sql in c.afterCopy { out += "       \(sql);\n" }
            }
            out += "  3. build indexes:\n"
            for sql in f.createIndexes { out += "       \(sql);\n" }
            out += "  4. record " + f.metadata.models.map { "\($0.model) v\($0.version)" }.joined(separator: ", ")
                + " with their hashes and canonical JSON\n"
            out += carriedDescription(f, byCopy: false)
            out += "  5. verify the copy (quick_check, tables and indexes, row counts, hashes), keep the original in "
                + "backups/, swap the copy in\n"
        }
        return out
    }

    /// The lines that say what happens to what is not Seam's in one file.
    private func carriedDescription(_ f: FilePlan, byCopy: Bool) -> String {
        guard !f.carried.isEmpty else { return "" }
        var out = "  kept, not Seam's (\(f.carried.count) object\(f.carried.count == 1 ? "" : "s")):\n"
        for o in f.carried {
            let how = byCopy ? "carried in the byte copy" : (o.kind == .table ? "made in the copy, its rows copied" : "made in the copy")
            out += "     - \(o.summary): \(how)\n       \(o.sql);\n"
        }
        return out
    }
}
