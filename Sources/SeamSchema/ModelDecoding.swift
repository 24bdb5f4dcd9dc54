/// Why embedded canonical JSON could not be turned back into a model version.
public struct ModelDecodingError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "embedded model cannot be read: \(reason)" }
}

extension ModelVersion {
    /// Rebuilds a version from its canonical JSON, as stores embed it.
    ///
    /// Used when a store holds a shape this build does not list (an "unknown" store): the
    /// embedded model says what its tables are, so it can still be migrated by name. Renaming
    /// identifiers and custom stages are not part of the canonical form and so are absent. The
    /// text must be exactly canonical: re-encoding the decoded model must give the same bytes.
    public init(canonicalJSON text: String, label: Int = 0) throws(ModelDecodingError) {
        let doc: JSONValue
        do { doc = try JSONText.parse(text) } catch { throw ModelDecodingError(error.description) }
        guard doc["format"]?.int64Value == SchemaEncoding.format else {
            throw ModelDecodingError("unsupported format \(doc["format"]?.minified ?? "none")")
        }
        guard let name = doc["model"]?.stringValue, let entities = doc["entities"]?.objectValue,
              let configurations = doc["configurations"]?.objectValue
        else { throw ModelDecodingError("missing model, entities or configurations") }
        var draft = ModelDraft(model: name, version: label)
        draft.versionHashModifier = doc["versionHashModifier"]?.stringValue
        let objects = Dictionary(entities.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        var added = Set<String>()
        for (configuration, members) in configurations {
            do { try draft.addConfiguration(configuration) } catch { throw ModelDecodingError(error.description) }
            for member in members.arrayValue ?? [] {
                guard let entityName = member.stringValue, let object = objects[entityName] else {
                    throw ModelDecodingError("configuration \(configuration) lists an unknown entity")
                }
                guard added.insert(entityName).inserted else { throw ModelDecodingError("entity \(entityName) is listed twice") }
                let entity = try Self.decodeEntity(entityName, object)
                do { try draft.appendDecodedEntity(entity, in: configuration) } catch { throw ModelDecodingError(error.description) }
            }
        }
        do { try self.init(draft) } catch { throw ModelDecodingError(error.description) }
        guard canonicalJSON == text else { throw ModelDecodingError("the text is not in canonical form") }
    }

    private static func decodeEntity(_ name: String, _ o: JSONValue) throws(ModelDecodingError) -> Entity {
        guard let attrs = o["attributes"]?.objectValue else { throw ModelDecodingError("entity \(name) has no attributes") }
        var attributes: [Attribute] = []
        for (attrName, a) in attrs {
            guard let typeName = a["type"]?.stringValue, let type = AttributeType(rawValue: typeName),
                  let optional = a["optional"]?.boolValue
            else { throw ModelDecodingError("attribute \(name).\(attrName) has no valid type or optionality") }
            var attribute = Attribute(attrName, type, optional: optional)
            attribute.versionHashModifier = a["versionHashModifier"]?.stringValue
            if let t = a["transformer"] {
                guard let raw = t.stringValue, let transformer = Attribute.Transformer(rawValue: raw) else {
                    throw ModelDecodingError("attribute \(name).\(attrName) has an unknown transformer (known: "
                                             + Attribute.Transformer.allCases.map(\.rawValue).joined(separator: ", ") + ")")
                }
                attribute.transformer = transformer
            }
            if let d = a["default"] {
                guard let value = decodeValue(d, type) else {
                    throw ModelDecodingError("attribute \(name).\(attrName) has an invalid default")
                }
                attribute.defaultValue = value
            }
            attributes.append(attribute)
        }
        func lists(_ key: String) -> [[String]] {
            (o[key]?.arrayValue ?? []).map { ($0.arrayValue ?? []).compactMap(\.stringValue) }
        }
        var links: [Link] = []
        for (attr, l) in o["links"]?.objectValue ?? [] {
            guard let target = l["target"]?.stringValue, let rule = l["deleteRule"]?.stringValue.flatMap(DeleteRule.init),
                  let kind = l["kind"]?.stringValue.flatMap(LinkKind.init)
            else { throw ModelDecodingError("link \(name).\(attr) is invalid") }
            links.append(Link(attr, to: target, onDelete: rule, kind: kind))
        }
        return Entity(name, attributes: attributes, indexes: lists("indexes").map(Index.init),
                      unique: lists("unique").map(UniqueConstraint.init), links: links,
                      versionHashModifier: o["versionHashModifier"]?.stringValue)
    }

    private static func decodeValue(_ v: JSONValue, _ type: AttributeType) -> AttributeValue? {
        switch type {
        case .string: return v.stringValue.map(AttributeValue.string)
        case .uuid: return v.stringValue.map(AttributeValue.uuid)
        case .json: return v.stringValue.map(AttributeValue.json)
        case .integer: return v.int64Value.map(AttributeValue.integer)
        case .bool: return v.boolValue.map(AttributeValue.bool)
        case .binary: return v.stringValue.flatMap(Base64.decode).map(AttributeValue.binary)
        case .double, .date:
            guard let s = v.stringValue, s.hasPrefix("f64:"), let bits = UInt64(s.dropFirst(4), radix: 16) else { return nil }
            return type == .double ? .double(Double(bitPattern: bits)) : .date(Double(bitPattern: bits))
        }
    }
}
