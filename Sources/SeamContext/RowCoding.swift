import SeamSchema

/// Rows and change sets as JSON, for the history table and the save journal.
///
/// Values are written by type: text as strings, integers and doubles as numbers (doubles in
/// Swift's shortest round-tripping form), booleans as `true`/`false`, dates as Unix seconds,
/// binary as base64, json as the JSON value itself, nil as `null`.
enum RowCoding {
    static func encode(_ value: AttributeValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .string(let s), .uuid(let s): return .string(s)
        case .integer(let i): return .number(String(i))
        case .double(let d), .date(let d): return .number(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)")
        case .bool(let b): return .bool(b)
        case .binary(let bytes): return .string(Base64.encode(bytes))
        case .json(let text): return (try? JSONText.parse(text)) ?? .string(text)
        }
    }

    static func decode(_ json: JSONValue, as type: AttributeType) -> AttributeValue {
        switch (type, json) {
        case (_, .null): return .null
        case (.string, .string(let s)): return .string(s)
        case (.uuid, .string(let s)): return .uuid(s)
        case (.integer, .number(let n)): return Int64(n).map(AttributeValue.integer) ?? .null
        case (.double, .number(let n)): return Double(n).map(AttributeValue.double) ?? .null
        case (.date, .number(let n)): return Double(n).map(AttributeValue.date) ?? .null
        case (.bool, .bool(let b)): return .bool(b)
        case (.binary, .string(let s)): return Base64.decode(s).map(AttributeValue.binary) ?? .null
        case (.json, let v): return .json(v.minified)
        default: return .null
        }
    }

    static func encode(_ values: [String: AttributeValue]) -> JSONValue {
        .object(values.sorted { $0.key < $1.key }.map { ($0.key, encode($0.value)) })
    }

    static func decode(_ json: JSONValue, entity: Entity) -> [String: AttributeValue] {
        var out: [String: AttributeValue] = [:]
        for (key, value) in json.objectValue ?? [] {
            if let a = entity.attribute(key) { out[key] = decode(value, as: a.type) }
        }
        return out
    }

    static func encode(_ change: RowChange) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("store", .string(change.store)), ("entity", .string(change.entity)), ("uuid", .string(change.uuid)),
            ("kind", .string(change.kind.rawValue)), ("changedKeys", .array(change.changedKeys.map(JSONValue.string))),
        ]
        if let old = change.old { members.append(("old", encode(old))) }
        if let new = change.new { members.append(("new", encode(new))) }
        return .object(members)
    }

    static func decodeChange(_ json: JSONValue, schema: Schema) -> RowChange? {
        guard let entityName = json["entity"]?.stringValue, let entity = schema.entity(entityName)?.entity,
              let kind = json["kind"]?.stringValue.flatMap(RowChange.Kind.init), let uuid = json["uuid"]?.stringValue
        else { return nil }
        return RowChange(
            store: json["store"]?.stringValue ?? "", entity: entityName, uuid: uuid, kind: kind,
            changedKeys: json["changedKeys"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            old: json["old"].map { decode($0, entity: entity) }, new: json["new"].map { decode($0, entity: entity) })
    }
}
