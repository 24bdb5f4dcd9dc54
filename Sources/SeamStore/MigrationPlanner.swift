import SeamSchema

/// Infers a migration from the versions a directory's files hold to the current versions.
///
/// Mapping rules (the lightweight migration of Core Data, made explicit):
/// - entities and attributes follow their renaming identifiers version by version, so a rename
///   two versions back is still found; a model read from a store's embedded JSON maps by name;
/// - added attributes get the value a step-by-step migration would have given them: the default
///   of the version that added them (or nil), filled by a later optional → required;
///   optional → required fills nils with the default of the version that made it required;
/// - an entity moved to another configuration is copied from the other file;
/// - custom stages of every version crossed run on each row of their entity, oldest first;
/// - something that vanishes without a declared removal while something of the same type
///   appears is ambiguous and refused; a type change is refused.
public enum MigrationPlanner {
    /// The plan for `classifications` (one per configuration file) to reach `schema`'s current versions.
    public static func plan(_ classifications: [StoreClassification], schema: Schema) throws(StoreError) -> MigrationPlan {
        var files: [MigrationPlan.FilePlan] = []
        let byConfiguration = Dictionary(uniqueKeysWithValues: classifications.map { ($0.configuration, $0) })
        for c in classifications where c.state == .older || (c.state == .new && needsCopy(into: c.configuration, classifications)) {
            files.append(try plan(file: c, all: byConfiguration, schema: schema))
        }
        try checkMovedRowsArrive(files, byConfiguration, schema: schema)
        return MigrationPlan(files: files)
    }

    /// An entity that moves to another file is dropped from the file it leaves; its rows must
    /// then be copied into the other, which is so only when that file is built by this plan.
    /// One that is current already (or newer, or unreadable) would not receive them: refused,
    /// rather than the rows lost.
    private static func checkMovedRowsArrive(
        _ files: [MigrationPlan.FilePlan], _ all: [String: StoreClassification], schema: Schema
    ) throws(StoreError) {
        let built = Set(files.map(\.configuration))
        for file in files {
            guard let c = all[file.configuration] else { continue }
            for (name, status) in c.models {
                guard let source = status.source, let m = schema.model(name) else { continue }
                for e in source.entities(in: file.configuration) {
                    guard let forward = forwardEntityName(e.name, from: source, in: m),
                          let destination = m.current.configuration(of: forward), destination != file.configuration,
                          !built.contains(destination)
                    else { continue }
                    throw StoreError(.needsMigration(detail: """
                        \(file.configuration).sqlite holds \(name).\(e.name), which now lives in \(destination).sqlite as \(forward); \
                        \(destination).sqlite is \(all[destination]?.summary ?? "not readable") and would not receive those rows. \
                        Move \(destination).sqlite aside (it is rebuilt from \(file.configuration).sqlite) and migrate again
                        """), path: c.path)
                }
            }
        }
    }

    /// A new file that receives an entity moved out of an existing file must be built by copy too.
    private static func needsCopy(into configuration: String, _ all: [StoreClassification]) -> Bool {
        all.contains { $0.state == .older && $0.configuration != configuration }
    }

    private static func plan(
        file: StoreClassification, all: [String: StoreClassification], schema: Schema
    ) throws(StoreError) -> MigrationPlan.FilePlan {
        var creates: [String] = []
        var indexes: [String] = []
        var copies: [MigrationPlan.Copy] = []
        var records: [StoreMetadata.ModelRecord] = []
        var copiedSources = Set<String>()
        for model in schema.models {
            let target = model.current
            let entities = target.entities(in: file.configuration)
            for entity in entities {
                creates.append(SchemaSQL.createTable(entity))
                indexes += SchemaSQL.createIndexes(entity)
                if let copy = try copyStep(for: entity, model: model, all: all, path: file.path) {
                    copies.append(copy)
                    copiedSources.insert("\(copy.sourceConfiguration).\(copy.sourceTable)")
                }
            }
            if !entities.isEmpty || file.models.contains(where: { $0.name == model.name }) {
                records.append(StoreMetadata.record(target, configuration: file.configuration))
            }
        }
        var dropped: [String] = []
        for (name, status) in file.models {
            guard let source = status.source else { continue }
            for e in source.entities(in: file.configuration) where !copiedSources.contains("\(file.configuration).\(e.name)")
                && !movedAway(e.name, model: name, from: file.configuration, schema: schema, all: all)
            {
                dropped.append("drop \(name).\(e.name) (removed in a later version)")
            }
        }
        var plan = MigrationPlan.FilePlan(
            configuration: file.configuration, from: file.summary, createTables: creates, copies: copies,
            createIndexes: indexes, metadata: StoreMetadata(configuration: file.configuration, format: StoreMetadata.currentFormat,
                                                            models: records),
            dropped: dropped)
        for (name, status) in file.models { if let v = status.source { plan.fromVersions[name] = v.version } }
        if file.state == .older, let statements = alterStatements(file: file, copies: copies, schema: schema) {
            plan.method = .alter(statements)
        }
        plan.carried = try carried(file, plan: plan)
        return plan
    }

    /// What the file holds that is not Seam's, as the copy will hold it; refused (before anything
    /// is copied) when one object does not fit the new version.
    private static func carried(_ file: StoreClassification, plan: MigrationPlan.FilePlan) throws(StoreError) -> [ForeignObject] {
        guard !file.foreign.isEmpty else { return [] }
        do {
            var objects = file.foreign
            if case .alter(let statements) = plan.method {
                let sourceLayout = file.models.flatMap { _, status in
                    status.source.map { SchemaSQL.create($0, configuration: file.configuration) } ?? []
                }
                objects = try ForeignObjects.afterAltering(objects, with: statements, sourceLayout: sourceLayout,
                                                           bookkeeping: file.bookkeeping)
            }
            try ForeignObjects.check(carrying: objects, into: plan.createTables + plan.createIndexes, bookkeeping: file.bookkeeping)
            return objects
        } catch {
            throw StoreError(.cannotCarry(error.object, detail: error.detail), path: file.path)
        }
    }

    // MARK: - Changing a copy in place

    /// The statements that turn a byte copy of the file into the target shape, or `nil` when the
    /// change needs rows rewritten (a stage, a removed or retyped attribute, a changed default or
    /// optionality, an entity renamed or moved in, attributes reordered).
    private static func alterStatements(
        file: StoreClassification, copies: [MigrationPlan.Copy], schema: Schema
    ) -> [String]? {
        let q = SchemaSQL.quote
        var dropIndexes: [String] = []
        var renames: [String] = []
        var adds: [String] = []
        var createIndexes: [String] = []
        for copy in copies {
            guard copy.sourceConfiguration == file.configuration, copy.sourceTable == copy.entity, copy.stages.isEmpty else {
                return nil
            }
            let source = copy.sourceEntity.attributes
            let target = copy.targetEntity.attributes
            guard target.count >= source.count else { return nil }
            var renamed: [(from: String, to: String)] = []
            for (i, s) in source.enumerated() {
                let t = target[i]
                guard copy.expressions[i] == q(s.name), t.type == s.type, t.isOptional == s.isOptional,
                      t.defaultValue == s.defaultValue
                else { return nil }
                if t.name != s.name { renamed.append((s.name, t.name)) }
            }
            let table = q(copy.entity)
            if renamed.contains(where: { r in source.contains { $0.name == r.to } }) {
                // Attributes trading names: each through a name no attribute can have first.
                for (k, r) in renamed.enumerated() { renames.append("ALTER TABLE \(table) RENAME COLUMN \(q(r.from)) TO \(q("~\(k)"))") }
                for (k, r) in renamed.enumerated() { renames.append("ALTER TABLE \(table) RENAME COLUMN \(q("~\(k)")) TO \(q(r.to))") }
            } else {
                for r in renamed { renames.append("ALTER TABLE \(table) RENAME COLUMN \(q(r.from)) TO \(q(r.to))") }
            }
            for (i, t) in target.enumerated().dropFirst(source.count) {
                // ADD COLUMN gives existing rows today's default; one added on the way with
                // another default needs the copy.
                guard t.isOptional || !(t.defaultValue ?? .null).isNull,
                      copy.expressions[i] == SchemaSQL.literal(t.defaultValue ?? .null),
                      SchemaSQL.isPlainLiteral(t.defaultValue ?? .null)
                else { return nil }
                adds.append("ALTER TABLE \(q(copy.entity)) ADD COLUMN \(SchemaSQL.column(t))")
            }
            // An index is kept only when the target has it as it is: same name, same statement,
            // over no renamed column (a rename rewrites the index; traded names keep its name).
            let moved = Set(renamed.map(\.from))
            let old = SchemaSQL.indexes(copy.sourceEntity), new = SchemaSQL.indexes(copy.targetEntity)
            let kept = Set(old.filter { o in
                o.attributes.allSatisfy { !moved.contains($0) } && new.contains { $0.name == o.name && $0.sql == o.sql }
            }.map(\.name))
            for o in old where !kept.contains(o.name) { dropIndexes.append("DROP INDEX \(q(o.name))") }
            for n in new where !kept.contains(n.name) { createIndexes.append(n.sql) }
        }
        let copied = Set(copies.map(\.entity))
        var creates: [String] = []
        for model in schema.models {
            for e in model.current.entities(in: file.configuration) where !copied.contains(e.name) {
                creates.append(SchemaSQL.createTable(e))
                createIndexes += SchemaSQL.createIndexes(e)
            }
        }
        var drops: [String] = []
        for (_, status) in file.models {
            for e in status.source?.entities(in: file.configuration) ?? [] where !copied.contains(e.name) {
                drops.append("DROP TABLE \(q(e.name))")
            }
        }
        return dropIndexes + drops + renames + adds + creates + createIndexes
    }

    private static func movedAway(
        _ entity: String, model: String, from configuration: String, schema: Schema, all: [String: StoreClassification]
    ) -> Bool {
        guard let m = schema.model(model), let source = all[configuration]?.models.first(where: { $0.name == model })?.status.source,
              let name = forwardEntityName(entity, from: source, in: m)
        else { return false }
        return m.current.configuration(of: name) != configuration
    }

    // MARK: - One entity

    /// The copy that fills `entity` (current version), or `nil` when no original holds its rows.
    /// Two originals that both hold it (files from different releases side by side: one put
    /// back from elsewhere) are refused: one copy would drop the other's rows.
    private static func copyStep(
        for entity: Entity, model: VersionedModel, all: [String: StoreClassification], path: String
    ) throws(StoreError) -> MigrationPlan.Copy? {
        var found: [(configuration: String, entity: Entity, source: ModelVersion)] = []
        for (configuration, classification) in all.sorted(by: { $0.key < $1.key }) {
            guard let status = classification.models.first(where: { $0.name == model.name })?.status,
                  let source = status.source
            else { continue }
            for sourceEntity in source.entities(in: configuration)
            where forwardEntityName(sourceEntity.name, from: source, in: model) == entity.name {
                found.append((configuration, sourceEntity, source))
            }
        }
        if found.count > 1 {
            let holders = found.map { "\($0.configuration).sqlite (\(model.name) v\($0.source.version), as \($0.entity.name))" }
            throw StoreError(.needsMigration(detail: """
                \(model.name).\(entity.name) is held by \(holders.joined(separator: " and ")): files of different releases side \
                by side, and one copy would drop the other's rows. Move aside the one that does not belong (a file put back \
                from elsewhere), then migrate again
                """), path: path)
        }
        guard let only = found.first else { return nil }
        return try copy(from: only.entity, in: only.configuration, source: only.source, to: entity, model: model, path: path)
    }

    /// Whether `source` is one of `model`'s listed versions (and so has renaming history).
    private static func isListed(_ source: ModelVersion, in model: VersionedModel) -> Bool {
        model.version(source.version)?.hashes.model == source.hashes.model
    }

    /// The name entity `name` of `source` has in the current version, or `nil` when it was removed.
    static func forwardEntityName(_ name: String, from source: ModelVersion, in model: VersionedModel) -> String? {
        guard isListed(source, in: model) else { return model.current.entity(name) != nil ? name : nil }
        var current = name
        for v in model.versions where v.version > source.version {
            if let renamed = v.entities.first(where: { $0.renamingIdentifier == current }) {
                current = renamed.name
            } else if v.entities.contains(where: { $0.name == current && $0.renamingIdentifier == nil }) {
                continue
            } else {
                return nil
            }
        }
        return current
    }

    private enum AttributeFate { case kept(String), removed, vanished }

    /// Where attribute `name` of entity `entity` (both as named in `source`) ends up.
    private static func forwardAttribute(
        _ name: String, entity: String, from source: ModelVersion, in model: VersionedModel
    ) -> AttributeFate {
        guard isListed(source, in: model) else {
            guard let target = model.current.entity(entity) else { return .vanished }
            return target.attribute(name) != nil ? .kept(name) : .vanished
        }
        var attr = name
        var ent = entity
        for v in model.versions where v.version > source.version {
            let previousEntity = ent
            guard let e = v.entities.first(where: { $0.renamingIdentifier == ent })
                ?? v.entities.first(where: { $0.name == ent && $0.renamingIdentifier == nil })
            else { return .removed }
            ent = e.name
            if let a = e.attributes.first(where: { $0.renamingIdentifier == attr }) {
                attr = a.name
            } else if e.attributes.contains(where: { $0.name == attr && $0.renamingIdentifier == nil }),
                      !v.removals.contains("\(previousEntity).\(attr)")
            {
                continue
            } else {
                return v.removals.contains("\(previousEntity).\(attr)") ? .removed : .vanished
            }
        }
        return .kept(attr)
    }

    /// The value rows of `source` hold for `t`, an attribute they lack, once migrated one version
    /// at a time: the default of the version that added it (nil if it had none), then the default
    /// of a version that made it required while it was still nil. A v1 timer gets v2's icon
    /// `timer`, as it would have on the way through v2, not the `clock` that v3 made the default
    /// for timers created later. An unlisted source has no history: today's default.
    static func valueOnArrival(of t: Attribute, in target: Entity, from source: ModelVersion, model: VersionedModel) -> AttributeValue? {
        guard isListed(source, in: model) else { return t.defaultValue }
        var arrived = false
        var value: AttributeValue?
        for a in declarations(of: t, in: target, after: source, model: model) {
            if !arrived {
                arrived = true
                value = a.defaultValue
            } else if value == nil || value?.isNull == true, !a.isOptional {
                value = a.defaultValue
            }
        }
        return arrived ? value : t.defaultValue
    }

    /// The value a nil of `t` (held by the source as `held`) takes, migrated one version at a
    /// time: the default of the first version after the source that made it required while it
    /// was optional (no nil is left after that, whatever later versions do); nil when none did.
    /// A colour a v2 timer left nil becomes v3's `blue`, even if a later version made another
    /// colour the default, or the attribute optional again. An unlisted source has no history:
    /// today's default, when the attribute is required now.
    static func nilFill(of t: Attribute, held: Attribute, in target: Entity, from source: ModelVersion,
                        model: VersionedModel) -> AttributeValue? {
        guard held.isOptional else { return nil }
        guard isListed(source, in: model) else { return t.isOptional ? nil : t.defaultValue }
        let required = declarations(of: t, in: target, after: source, model: model).first { !$0.isOptional }
        return required?.defaultValue.flatMap { $0.isNull ? nil : $0 }
    }

    /// `t` (of `target`, current version) as each version after `source` declared it, oldest
    /// first, in the versions that have it.
    private static func declarations(of t: Attribute, in target: Entity, after source: ModelVersion,
                                     model: VersionedModel) -> [Attribute] {
        model.versions.filter { $0.version > source.version }.compactMap { v in
            guard let e = v.entities.first(where: { forwardEntityName($0.name, from: v, in: model) == target.name }) else { return nil }
            return e.attributes.first {
                if case .kept(let name) = forwardAttribute($0.name, entity: e.name, from: v, in: model) { return name == t.name }
                return false
            }
        }
    }

    /// Today's name → the name in `version`, for each attribute of `entity` (as `version` names
    /// it) renamed since.
    private static func namesAtStage(entity: String, of version: ModelVersion, model: VersionedModel) -> [String: String] {
        guard let e = version.entity(entity) else { return [:] }
        var names: [String: String] = [:]
        for a in e.attributes {
            if case .kept(let now) = forwardAttribute(a.name, entity: e.name, from: version, in: model), now != a.name {
                names[now] = a.name
            }
        }
        return names
    }

    private static func copy(
        from sourceEntity: Entity, in sourceConfiguration: String, source: ModelVersion, to target: Entity,
        model: VersionedModel, path: String
    ) throws(StoreError) -> MigrationPlan.Copy {
        var sourceFor: [String: Attribute] = [:]
        var vanished: [Attribute] = []
        var notes: [String] = []
        for a in sourceEntity.attributes {
            switch forwardAttribute(a.name, entity: sourceEntity.name, from: source, in: model) {
            case .kept(let name): sourceFor[name] = a
            case .removed: notes.append("drop \(a.name)")
            case .vanished: vanished.append(a)
            }
        }
        let added = target.attributes.filter { sourceFor[$0.name] == nil }
        for v in vanished {
            if let twin = added.first(where: { $0.type == v.type }) {
                throw StoreError(.ambiguous(model: model.name, entity: target.name, removed: v.name, added: twin.name), path: path)
            }
            notes.append("drop \(v.name)")
        }
        var expressions: [String] = []
        for t in target.attributes {
            if let s = sourceFor[t.name] {
                guard s.type == t.type else {
                    throw StoreError(.typeChange(model: model.name, entity: target.name, attribute: t.name, from: s.type, to: t.type),
                                     path: path)
                }
                if s.name != t.name { notes.append("\(s.name) → \(t.name)") }
                if let d = nilFill(of: t, held: s, in: target, from: source, model: model) {
                    expressions.append("COALESCE(\(SchemaSQL.quote(s.name)), \(SchemaSQL.literal(d)))")
                    notes.append("\(t.name): nil becomes \(d)")
                } else {
                    expressions.append(SchemaSQL.quote(s.name))
                }
            } else {
                let value = valueOnArrival(of: t, in: target, from: source, model: model)
                expressions.append(SchemaSQL.literal(value ?? .null))
                notes.append("add \(t.name)" + (value.map { " = \($0)" } ?? ""))
            }
        }
        if sourceEntity.name != target.name { notes.insert("\(sourceEntity.name) → \(target.name)", at: 0) }
        let staged: [(CustomStage, [String: String])] = isListed(source, in: model)
            ? model.versions.filter { $0.version > source.version }.flatMap { v in
                // The stage names its entity as of version v; follow that name to the current one.
                v.customStages.filter { forwardEntityName($0.entity, from: v, in: model) == target.name }
                    .map { ($0, namesAtStage(entity: $0.entity, of: v, model: model)) }
            } : []
        let stages = staged.map(\.0)
        if !stages.isEmpty { notes.append("custom stages: " + stages.map(\.name).joined(separator: ", ")) }
        return MigrationPlan.Copy(
            model: model.name, entity: target.name, sourceConfiguration: sourceConfiguration, sourceTable: sourceEntity.name,
            columns: target.attributes.map(\.name), expressions: expressions, targetTypes: target.attributes.map(\.type),
            sourceColumns: sourceEntity.attributes.map { ($0.name, $0.type) }, stages: stages,
            stageNames: staged.map(\.1), notes: notes,
            sourceEntity: sourceEntity, targetEntity: target)
    }
}
