import SeamSchema

/// The sync worker's own model: change tokens and per-record sync state, stored in `Cloud`
/// beside the timers (a combined store) and versioned on its own.
///
/// History:
/// 1. `SyncToken` (named tokens) and `SyncRecord` (per synced row: its change tag).
/// 2. `SyncRecord` keeps the fields a record had that this build does not know, and whether it
///    has changes waiting to be exported.
public enum SyncMetadataModel {
    public static let name = "SyncMetadata"

    public static let history: VersionedModel = {
        do { return try build() } catch { fatalError("invalid sync metadata model: \(error)") }
    }()

    public static func build() throws(SchemaError) -> VersionedModel {
        try VersionedModel([try v1(), try v2()])
    }

    static func v1() throws(SchemaError) -> ModelDraft {
        var m = ModelDraft(model: name)
        try m.addConfiguration("Cloud")
        try m.addEntity(
            Entity("SyncToken",
                   attributes: [Attribute("uuid", .uuid), Attribute("name", .string), Attribute("value", .string, optional: true)],
                   unique: [UniqueConstraint("name")]),
            in: "Cloud"
        )
        try m.addEntity(
            Entity("SyncRecord",
                   attributes: [
                       Attribute("uuid", .uuid),
                       Attribute("recordType", .string),
                       Attribute("recordUUID", .uuid),
                       Attribute("changeTag", .string, optional: true),
                       Attribute("modifiedAt", .date, default: .date(0)),
                   ],
                   unique: [UniqueConstraint("recordType", "recordUUID")]),
            in: "Cloud"
        )
        return m
    }

    static func v2() throws(SchemaError) -> ModelDraft {
        var m = try v1().next()
        try m.modify("SyncRecord") { e throws(SchemaError) in
            try e.add(Attribute("unknownFields", .json, default: .json("{}")))
            try e.add(Attribute("pendingExport", .bool, default: .bool(false)))
        }
        return m
    }
}
