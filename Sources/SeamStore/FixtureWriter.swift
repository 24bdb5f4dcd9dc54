import SeamSchema
import SeamSystem

/// Writes store files as a given release of an application wrote them, filled with generated
/// rows: for tests of migration from every old version, and for benchmarks.
///
/// Rows are deterministic for a seed. Attributes under a unique constraint get distinct values;
/// linking attributes point at generated rows of their target (row i at target i), so
/// link rules have something to act on; optional attributes are nil in every fifth row.
public struct FixtureWriter {
    public let schema: Schema
    /// Model name → the version label to write.
    public let versions: [String: Int]
    public var rowsPerEntity: Int
    public var seed: UInt64

    public init(schema: Schema, versions: [String: Int], rowsPerEntity: Int, seed: UInt64 = 1) {
        self.schema = schema
        self.versions = versions
        self.rowsPerEntity = rowsPerEntity
        self.seed = seed
    }

    /// Writes every configuration's file into `directory` (which must not hold stores yet).
    /// `progress` is told the rows written so far.
    public func write(to directory: String, progress: (Int) -> Void = { _ in }) throws(StoreError) {
        do { try FileSystem.makeDirectory(directory) } catch { throw StoreError(.system(error), path: directory) }
        let layout = StoreLayout(directory: directory)
        var generator = SplitMix64(seed: seed)
        var uuids: [String: [String]] = [:]
        var written = 0
        let resolved = try schema.models.map { m throws(StoreError) -> ModelVersion in
            guard let label = versions[m.name], let v = m.version(label) else {
                throw StoreError(.unknown(detail: "no version \(versions[m.name].map(String.init) ?? "?") of \(m.name)"), path: directory)
            }
            return v
        }
        // Uuids first, so that links can point at rows of entities in either file.
        for v in resolved {
            for e in v.entities {
                uuids[e.name] = (0..<rowsPerEntity).map { _ in UUIDText.random(using: &generator) }
            }
        }
        let configurations = Set(resolved.flatMap { $0.configurations.map(\.name) }).sorted()
        for configuration in configurations {
            let path = layout.store(configuration)
            guard !FileSystem.exists(path) else {
                throw StoreError(.unknown(detail: "a store already exists there"), path: path)
            }
            do {
                let db = try Database(path: path)
                try db.execute("PRAGMA synchronous=OFF")
                try db.execute("BEGIN")
                var records: [StoreMetadata.ModelRecord] = []
                for v in resolved where !v.entities(in: configuration).isEmpty {
                    for sql in SchemaSQL.create(v, configuration: configuration) { try db.execute(sql) }
                    records.append(StoreMetadata.record(v, configuration: configuration))
                    for e in v.entities(in: configuration) {
                        try fill(e, db: db, uuids: uuids, generator: &generator, written: &written, progress: progress)
                    }
                }
                try StoreMetadata(configuration: configuration, format: StoreMetadata.currentFormat, models: records).write(to: db)
                try db.execute("COMMIT")
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                db.close()
            } catch {
                throw StoreError(.database(error), path: path)
            }
        }
    }

    private func fill(
        _ e: Entity, db: Database, uuids: [String: [String]], generator: inout SplitMix64, written: inout Int,
        progress: (Int) -> Void
    ) throws(DatabaseError) {
        let columns = e.attributes.map(\.name)
        let insert = try db.prepare("INSERT INTO \(SchemaSQL.quote(e.name)) (\(columns.map(SchemaSQL.quote).joined(separator: ", "))) "
                                    + "VALUES (" + columns.indices.map { "?\($0 + 1)" }.joined(separator: ", ") + ")")
        let unique = Set(e.uniqueConstraints.flatMap(\.attributes))
        let own = uuids[e.name] ?? []
        for row in 0..<rowsPerEntity {
            var values: [AttributeValue] = []
            for a in e.attributes {
                values.append(value(for: a, in: e, row: row, own: own, unique: unique.contains(a.name), uuids: uuids,
                                    generator: &generator))
            }
            try insert.bind(values)
            while try insert.step() {}
            written += 1
            if written % 10_000 == 0 { progress(written) }
        }
    }

    private func value(
        for a: Attribute, in e: Entity, row: Int, own: [String], unique: Bool, uuids: [String: [String]],
        generator: inout SplitMix64
    ) -> AttributeValue {
        if a.name == Entity.identity { return .uuid(own[row]) }
        if let link = e.link(on: a.name) {
            let targets = uuids[link.target] ?? []
            if a.isOptional && (row % 5 == 4 || (unique && row >= targets.count)) || targets.isEmpty { return .null }
            return .uuid(targets[row % targets.count])
        }
        if a.isOptional && row % 5 == 4 && !unique { return .null }
        switch a.type {
        case .string: return .string(unique ? "\(a.name)-\(row)" : words[Int(generator.next() % UInt64(words.count))])
        case .integer: return .integer(unique ? Int64(row) : Int64(generator.next() % 1000))
        case .double: return .double(Double(generator.next() % 100_000) / 100)
        case .bool: return .bool(generator.next() % 2 == 0)
        case .date: return .date(1_700_000_000 + Double(row) + Double(generator.next() % 1000) / 1000)
        case .uuid: return .uuid(UUIDText.random(using: &generator))
        case .binary: return .binary((0..<8).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        case .json:
            if a.name == "steps" {
                let n = Int(generator.next() % 3) + 1
                return .json(CanonicalJSON.array((0..<n).map { i in
                    .object(["label": .string("step \(i + 1)"), "seconds": .integer(Int64(generator.next() % 600) + 1)])
                }).text)
            }
            return a.defaultValue ?? .json("{}")
        }
    }

    private let words = ["Tea", "Pasta", "Focus", "Plank", "Stretch", "Bread", "Nap", "Écrire", "茶", "Run 5k", "Eggs", "Rice"]
}
