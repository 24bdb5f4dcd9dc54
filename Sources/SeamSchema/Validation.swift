/// The checks a version must pass before it can exist.
enum Validation {
    static func check(_ draft: ModelDraft) throws(SchemaError) {
        func fail(_ kind: SchemaError.Kind, _ entity: String? = nil, _ attribute: String? = nil) -> SchemaError {
            draft.error(kind, entity: entity, attribute: attribute)
        }
        guard Names.isValid(draft.model) else { throw fail(.invalidName(draft.model)) }
        var seen: [String: String] = [:]  // lowercased → as written
        let names = Set(draft.entities.map(\.name))
        for entity in draft.entities {
            guard Names.isValid(entity.name) else { throw fail(.invalidName(entity.name), entity.name) }
            if let other = seen.updateValue(entity.name, forKey: entity.name.lowercased()) {
                throw fail(other == entity.name ? .duplicateEntity : .namesDifferOnlyInCase(other), entity.name)
            }
            try checkAttributes(entity, fail)
            try checkIndexes(entity, fail)
            try checkLinks(entity, in: draft, names: names, fail)
        }
        try checkIndexNames(draft, fail)
        try checkConfigurations(draft, fail)
    }

    /// SQLite compares table and index names without regard to case, in one namespace: the
    /// indexes of a version may share a name neither with each other nor with an entity.
    private static func checkIndexNames(
        _ draft: ModelDraft, _ fail: (SchemaError.Kind, String?, String?) -> SchemaError
    ) throws(SchemaError) {
        var taken = Set(draft.entities.map { $0.name.lowercased() })
        for entity in draft.entities {
            let names = entity.uniqueConstraints.map { Entity.indexName(entity.name, $0.attributes, unique: true) }
                + entity.indexes.map { Entity.indexName(entity.name, $0.attributes, unique: false) }
            for name in names where !taken.insert(name.lowercased()).inserted {
                throw fail(.indexNameClash(name), entity.name, nil)
            }
        }
    }

    private static func checkAttributes(
        _ entity: Entity, _ fail: (SchemaError.Kind, String?, String?) -> SchemaError
    ) throws(SchemaError) {
        var names: [String: String] = [:]  // lowercased → as written
        for a in entity.attributes {
            guard Names.isValid(a.name) else { throw fail(.invalidName(a.name), entity.name, a.name) }
            if let other = names.updateValue(a.name, forKey: a.name.lowercased()) {
                throw fail(other == a.name ? .duplicateAttribute : .namesDifferOnlyInCase(other), entity.name, a.name)
            }
            if let d = a.defaultValue { try checkDefault(d, of: a, entity: entity.name, fail) }
        }
        guard let id = entity.attribute(Entity.identity), id.type == .uuid, !id.isOptional else {
            throw fail(.missingIdentity, entity.name, Entity.identity)
        }
    }

    private static func checkDefault(
        _ value: AttributeValue, of a: Attribute, entity: String,
        _ fail: (SchemaError.Kind, String?, String?) -> SchemaError
    ) throws(SchemaError) {
        if value.isNull {
            if !a.isOptional { throw fail(.requiredDefaultIsNull, entity, a.name) }
            return
        }
        guard value.type == a.type else { throw fail(.defaultTypeMismatch(expected: a.type, found: value.type), entity, a.name) }
        switch value {
        case .uuid(let u) where !UUIDText.isCanonical(u):
            throw fail(.invalidDefault("'\(u)' is not a lowercase uuid"), entity, a.name)
        case .double(let d) where !d.isFinite, .date(let d) where !d.isFinite:
            throw fail(.invalidDefault("not a finite number"), entity, a.name)
        case .date(let d) where !AttributeValue.dateRange.contains(d):
            throw fail(.invalidDefault(AttributeValue.dateRangeText), entity, a.name)
        case .json(let text):
            do { _ = try JSONText.minify(text) } catch { throw fail(.invalidDefault(error.description), entity, a.name) }
        default: break
        }
    }

    private static func checkIndexes(
        _ entity: Entity, _ fail: (SchemaError.Kind, String?, String?) -> SchemaError
    ) throws(SchemaError) {
        for list in entity.indexes.map(\.attributes) + entity.uniqueConstraints.map(\.attributes) {
            guard !list.isEmpty else { throw fail(.emptyIndex, entity.name, nil) }
            for n in list where entity.attribute(n) == nil { throw fail(.unknownAttribute, entity.name, n) }
        }
        if Set(entity.indexes).count != entity.indexes.count {
            throw fail(.duplicateIndex(entity.indexes.first { i in entity.indexes.filter { $0 == i }.count > 1 }!.attributes),
                       entity.name, nil)
        }
        let unique = entity.uniqueConstraints
        if Set(unique).count != unique.count {
            throw fail(.duplicateConstraint(unique.first { u in unique.filter { $0 == u }.count > 1 }!.attributes), entity.name, nil)
        }
    }

    private static func checkLinks(
        _ entity: Entity, in draft: ModelDraft, names: Set<String>, _ fail: (SchemaError.Kind, String?, String?) -> SchemaError
    ) throws(SchemaError) {
        var linked = Set<String>()
        for link in entity.links {
            guard let a = entity.attribute(link.attribute) else { throw fail(.unknownAttribute, entity.name, link.attribute) }
            guard a.type == .uuid else { throw fail(.linkAttributeNotUUID(a.type), entity.name, link.attribute) }
            guard linked.insert(link.attribute).inserted else { throw fail(.duplicateLink, entity.name, link.attribute) }
            if link.deleteRule == .nullify, !a.isOptional { throw fail(.nullifyRequired, entity.name, link.attribute) }
            guard names.contains(link.target) else {
                throw fail(.linkToUnknownEntity(link.target), entity.name, link.attribute)
            }
            if link.kind == .relationship {
                let source = draft.configurations.first { $0.entities.contains(entity.name) }?.name
                let target = draft.configurations.first { $0.entities.contains(link.target) }?.name
                if source != target {
                    throw fail(.relationshipAcrossConfigurations(source: "\(entity.name) (\(source ?? "none"))",
                                                                 target: "\(link.target) (\(target ?? "none"))"),
                               entity.name, link.attribute)
                }
            }
        }
    }

    private static func checkConfigurations(
        _ draft: ModelDraft, _ fail: (SchemaError.Kind, String?, String?) -> SchemaError
    ) throws(SchemaError) {
        let names = Set(draft.entities.map(\.name))
        var holding: [String: [String]] = [:]
        for c in draft.configurations {
            for e in c.entities {
                guard names.contains(e) else { throw fail(.unknownEntity, e, nil) }
                if holding[e]?.last != c.name { holding[e, default: []].append(c.name) }
            }
        }
        for entity in draft.entities {
            let holders = holding[entity.name] ?? []
            if holders.isEmpty { throw fail(.entityInNoConfiguration, entity.name, nil) }
            if holders.count > 1 { throw fail(.entityInSeveralConfigurations(holders), entity.name, nil) }
        }
    }
}
