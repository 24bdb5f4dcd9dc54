/// Builds the canonical JSON of entities, configurations and models, and hashes it.
///
/// The byte-for-byte rules are specified in `Protocol/schema.md`; keep the two in step, and bump
/// `format` when either changes (every frozen hash would change with it).
public enum SchemaEncoding {
    /// The version of this encoding; part of every hashed document.
    public static let format: Int64 = 1

    /// The canonical object of one entity: everything that changes shape or meaning, nothing else.
    public static func entity(_ e: Entity) -> CanonicalJSON {
        var attributes: [String: CanonicalJSON] = [:]
        for a in e.attributes {
            var o: [String: CanonicalJSON] = ["type": .string(a.type.rawValue), "optional": .bool(a.isOptional)]
            if let d = a.defaultValue, !d.isNull { o["default"] = value(d) }
            if let m = a.versionHashModifier { o["versionHashModifier"] = .string(m) }
            if let t = a.transformer { o["transformer"] = .string(t.rawValue) }
            attributes[a.name] = .object(o)
        }
        var links: [String: CanonicalJSON] = [:]
        for l in e.links {
            links[l.attribute] = .object([
                "target": .string(l.target), "deleteRule": .string(l.deleteRule.rawValue), "kind": .string(l.kind.rawValue),
            ])
        }
        var o: [String: CanonicalJSON] = [
            "name": .string(e.name),
            "attributes": .object(attributes),
            "indexes": nameLists(e.indexes.map(\.attributes)),
            "unique": nameLists(e.uniqueConstraints.map(\.attributes)),
            "links": .object(links),
        ]
        if let m = e.versionHashModifier { o["versionHashModifier"] = .string(m) }
        return .object(o)
    }

    /// The canonical document of a whole model version.
    public static func model(
        name: String, entities: [Entity], configurations: [Configuration], modifier: String?
    ) -> CanonicalJSON {
        var o: [String: CanonicalJSON] = [
            "format": .integer(format),
            "model": .string(name),
            "entities": .object(Dictionary(uniqueKeysWithValues: entities.map { ($0.name, entity($0)) })),
            "configurations": .object(Dictionary(uniqueKeysWithValues: configurations.map {
                ($0.name, .array($0.entities.sorted(by: CanonicalJSON.utf8Less).map(CanonicalJSON.string)))
            })),
        ]
        if let modifier { o["versionHashModifier"] = .string(modifier) }
        return .object(o)
    }

    /// The document hashed for one configuration of a model: its entities' hashes.
    public static func configuration(
        model: String, name: String, entityHashes: [String: String], modifier: String?
    ) -> CanonicalJSON {
        var o: [String: CanonicalJSON] = [
            "format": .integer(format),
            "model": .string(model),
            "configuration": .string(name),
            "entities": .object(entityHashes.mapValues(CanonicalJSON.string)),
        ]
        if let modifier { o["versionHashModifier"] = .string(modifier) }
        return .object(o)
    }

    static func hashes(
        model: String, entities: [Entity], configurations: [Configuration], modifier: String?, modelJSON: String
    ) -> ModelHashes {
        var entityHashes: [String: String] = [:]
        for e in entities { entityHashes[e.name] = SHA256.hex(entity(e).text) }
        var configurationHashes: [String: String] = [:]
        let all = [Configuration(Configuration.defaultName, entities: entities.map(\.name))] + configurations
        for c in all {
            let names = Set(c.entities)
            let members = entityHashes.filter { names.contains($0.key) }
            configurationHashes[c.name] = SHA256.hex(
                configuration(model: model, name: c.name, entityHashes: members, modifier: modifier).text)
        }
        return ModelHashes(model: SHA256.hex(modelJSON), entities: entityHashes, configurations: configurationHashes)
    }

    /// A default value in canonical form. No floating-point numbers appear in hashed content:
    /// doubles and dates are written as `"f64:"` and the 16 hex digits of their IEEE 754 bits.
    public static func value(_ v: AttributeValue) -> CanonicalJSON {
        switch v {
        case .null: return .null
        case .string(let s), .uuid(let s): return .string(s)
        case .integer(let i): return .integer(i)
        case .bool(let b): return .bool(b)
        case .double(let d), .date(let d): return .string(f64(d))
        case .binary(let bytes): return .string(Base64.encode(bytes))
        case .json(let text): return .string((try? JSONText.minify(text)) ?? text)
        }
    }

    /// `"f64:"` followed by the bit pattern of `d` (positive zero for either zero).
    public static func f64(_ d: Double) -> String {
        let bits = (d == 0 ? 0.0 : d).bitPattern
        var bytes = [UInt8]()
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        return "f64:" + Hex.encode(bytes)
    }

    private static func nameLists(_ lists: [[String]]) -> CanonicalJSON {
        let sorted = lists.sorted { a, b in
            a.lexicographicallyPrecedes(b, by: CanonicalJSON.utf8Less)
        }
        return .array(sorted.map { .array($0.map(CanonicalJSON.string)) })
    }
}
