import SeamJSON
import SeamProtocol
import SeamSchema

/// What seamd says of itself: `org.varlink.service`'s `GetInfo` and `GetInterfaceDescription`,
/// and `org.seam.Store.Schema`. Pure: functions of the interfaces served and the schema.
enum Introspection {
    /// Every interface served, by name: the broker's own and the application's (`served`).
    static func interfaceDescriptions(serving served: [ServiceInterface]) -> [String: String] {
        var all = Interfaces.all
        for i in served { all[i.name] = i.description }
        return all
    }

    /// `GetInfo`'s reply.
    static func info(serving served: [ServiceInterface]) -> JSONObject {
        ["vendor": .string(Interfaces.vendor), "product": .string(Interfaces.product), "version": .string(Interfaces.version),
         "url": .string(Interfaces.url),
         "interfaces": .array(interfaceDescriptions(serving: served).keys.sorted().map(JSON.string))]
    }

    /// `GetInterfaceDescription`'s reply: the interface's varlink description.
    static func describe(_ p: JSONObject, serving served: [ServiceInterface]) -> Result<JSONObject, VarlinkError> {
        guard let name = p["interface"]?.stringValue else { return .failure(.invalidParameter("interface")) }
        guard let text = interfaceDescriptions(serving: served)[name] else { return .failure(.interfaceNotFound(name)) }
        return .success(["description": .string(text)])
    }

    /// `Schema`'s reply: each model's current version, its hashes, and its entities as the wire
    /// names them.
    static func schema(_ schema: Schema) -> JSONObject {
        let models: [JSON] = schema.models.map { m in
            let v = m.current
            let entities: [JSON] = v.entities.map { e in
                .object(["name": .string(e.name), "configuration": .string(v.configuration(of: e.name) ?? ""),
                         "attributes": .array(e.attributes.map { a in
                             .object(["name": .string(a.name), "type": .string(a.type.rawValue), "optional": .bool(a.isOptional)])
                         }),
                         "links": .array(e.links.map { l in
                             .object(["attribute": .string(l.attribute), "target": .string(l.target),
                                      "deleteRule": .string(l.deleteRule.rawValue)])
                         })])
            }
            return .object(["name": .string(m.name), "version": .integer(Int64(v.version)), "hash": .string(v.hashes.model),
                            "configurations": .object(JSONObject(uniqueKeysWithValues: v.hashes.configurations.sorted { $0.key < $1.key }
                                .map { ($0.key, JSON.string($0.value)) })),
                            "entities": .array(entities)])
        }
        return ["models": .array(models)]
    }
}
