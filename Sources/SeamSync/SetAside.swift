import SeamJSON
import SeamSchema

/// The records sync passed over, each with why: a server record this machine cannot take (too
/// large, not a JSON object, a field version no clock could have written, a value this store
/// refuses), or a row of this machine's the server cannot take (past the bound on a record).
/// Kept in the Cloud store as the `setAside` token (JSON), so that `seam sync status` lists them
/// after a restart too; at most `capacity`, the oldest dropped first. Pure.
struct SetAsideList: Equatable {
    static let tokenName = "setAside"
    static let capacity = 50

    struct Entry: Equatable {
        var type: String
        var uuid: String
        /// The server's change tag of the version set aside (0: this machine's row).
        var tag: Int64
        var reason: String

        var json: JSON {
            .object(["type": .string(type), "uuid": .string(uuid), "tag": .integer(tag), "reason": .string(reason)])
        }

        var key: RecordKey { RecordKey(type: type, uuid: uuid) }
    }

    /// The token's row, once there is one.
    private(set) var uuid: String?
    private(set) var entries: [Entry] = []

    init() {}

    /// The list a token's value holds (what cannot be read of it is dropped: it is only a list).
    init(uuid: String, text: String) {
        self.uuid = uuid
        for item in (try? JSON.decode(text))?.arrayValue ?? [] {
            guard let type = item["type"]?.stringValue, let id = item["uuid"]?.stringValue else { continue }
            entries.append(Entry(type: type, uuid: id, tag: item["tag"]?.int64Value ?? 0, reason: item["reason"]?.stringValue ?? ""))
        }
    }

    func contains(_ key: RecordKey) -> Bool { entries.contains { $0.key == key } }

    /// Adds `entry` (in place of one for the same record); true when the list changed.
    @discardableResult
    mutating func add(_ entry: Entry) -> Bool {
        var e = entry
        if e.reason.count > 300 { e.reason = String(e.reason.prefix(297)) + "…" }
        if entries.contains(e) { return false }
        entries.removeAll { $0.key == e.key }
        entries.append(e)
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
        return true
    }

    /// Takes `key` off the list (a version of it was applied or sent); true when it was on it.
    @discardableResult
    mutating func remove(_ key: RecordKey) -> Bool {
        let before = entries.count
        entries.removeAll { $0.key == key }
        return entries.count != before
    }

    /// The token's change, to join the save of what made the list change.
    mutating func change(into save: inout SaveBuilder) {
        let text = String(decoding: JSON.array(entries.map(\.json)).encoded(), as: UTF8.self)
        if let uuid {
            save.update("SyncToken", uuid, ["value": .string(text)])
        } else {
            let made = UUIDText.random()
            uuid = made
            save.insert("SyncToken", ["uuid": .string(made), "name": .string(Self.tokenName), "value": .string(text)])
        }
    }
}
