import SeamSchema
import SeamStore
import SeamSystem

extension Context {
    /// A row's state while a save is being worked out.
    struct Pending {
        var entity: Entity
        var store: String
        var old: [String: AttributeValue]?
        var new: [String: AttributeValue]?
    }

    /// The save being worked out: every row it touches, in the order first touched, and which
    /// staged rows link to which uuid (so that link rules find them without a pass over every
    /// row staged: a save deleting thousands of linked rows was quadratic, and held the broker).
    struct WorkingSet {
        var rows: [String: Pending] = [:]
        var order: [String] = []
        /// Each row's place in `order`.
        private var places: [String: Int] = [:]
        /// (entity, link attribute, uuid linked to) → the staged rows whose new values link so.
        private var linking: [String: Set<String>] = [:]

        static func key(_ entity: String, _ uuid: String) -> String { entity + "\u{0}" + uuid }

        /// Room for `operations` rows, so that a 1,000-row save's tables grow once rather than
        /// being rehashed ten times on the way (a row per operation at most, links aside).
        init(operations: Int = 0) {
            guard operations > 1 else { return }
            rows.reserveCapacity(operations)
            places.reserveCapacity(operations)
            order.reserveCapacity(operations)
        }

        mutating func set(_ p: Pending, uuid: String) {
            set(p, uuid: uuid, key: Self.key(p.entity.name, uuid))
        }

        /// `set(p, uuid:)` with the row's key made already (`key(_:_:)`): a big save's inserts
        /// make each key once.
        mutating func set(_ p: Pending, uuid: String, key k: String) {
            let before = rows.updateValue(p, forKey: k)
            if before == nil {
                places[k] = order.count
                order.append(k)
            }
            for link in p.entity.links {
                let was = before?.new?[link.attribute]?.stringValue, now = p.new?[link.attribute]?.stringValue
                guard was != now else { continue }
                if let was { linking[Self.linkKey(p.entity.name, link.attribute, was)]?.remove(uuid) }
                if let now { linking[Self.linkKey(p.entity.name, link.attribute, now), default: []].insert(uuid) }
            }
        }

        /// Where the row came in the order the save first touched rows.
        func place(_ entity: String, _ uuid: String) -> Int { places[Self.key(entity, uuid)] ?? Int.max }

        /// The staged rows of `entity` whose `attribute` now holds `uuid`.
        func rows(of entity: String, linkingBy attribute: String, to uuid: String) -> Set<String> {
            linking[Self.linkKey(entity, attribute, uuid)] ?? []
        }

        private static func linkKey(_ entity: String, _ attribute: String, _ uuid: String) -> String {
            entity + "\u{0}" + attribute + "\u{0}" + uuid
        }
    }

    /// The current time, Unix seconds.
    public static func now() -> Double { WallClock.now() }

    /// Applies `request` as one save by `author`; returns what changed, or nil when nothing did.
    ///
    /// Link rules run on deletes: `cascade` deletes linking rows, `nullify` clears the linking
    /// attribute, `deny` refuses. A delete by the author `sync` never cascades into another
    /// configuration: a running session whose timer was deleted on another machine stays, as an
    /// orphan (its link nullified), as the split-store pattern wants.
    @discardableResult
    public func save(_ request: SaveRequest, author: String = "cli", time: Double? = nil) throws(ContextError) -> ChangeSet? {
        try guarding { () throws(ContextError) -> ChangeSet? in try saveUnguarded(request, author: author, time: time) }
    }

    private func saveUnguarded(_ request: SaveRequest, author: String, time: Double?) throws(ContextError) -> ChangeSet? {
        try refuseIfStepped(request)
        try finishUnfinished()  // before anything is read: the stores as every earlier save left them
        var work = WorkingSet(operations: request.operations.count)
        for (i, op) in request.operations.enumerated() {
            do {
                switch op {
                case .insert(let entity, let values): try stageInsert(entity, values, checked: request.valuesChecked, into: &work)
                case .update(let entity, let uuid, let values): try stageUpdate(entity, uuid, values, into: &work)
                case .delete(let entity, let uuid): try stageDelete(entity, uuid, author: author, into: &work)
                }
            } catch {
                var placed = error
                placed.operation = placed.operation ?? i
                throw placed
            }
        }
        var changes: [RowChange] = []
        changes.reserveCapacity(work.order.count)
        for key in work.order {
            guard let p = work.rows[key], let change = Self.change(p, names: attributeNames[p.entity.name] ?? []) else { continue }
            changes.append(change)
        }
        guard !changes.isEmpty else { return nil }
        if let since = request.unchangedSince { try checkUnchanged(changes, since: since) }
        let set = ChangeSet(sequence: sequence + 1, author: author, time: time ?? Self.now(), changes: changes)
        try lease(through: set.sequence)
        try commit(set, work: work)
        sequence = set.sequence
        ring.append(set)
        return set
    }

    /// Refuses a save of `changes` when the history after `since` has changed one of their rows
    /// (see `SaveRequest.unchangedSince`). Reads only the history after `since`: what has been
    /// saved since the writer last read it.
    func checkUnchanged(_ changes: [RowChange], since: Int64) throws(ContextError) {
        guard since <= sequence else { throw ContextError(.sequenceAhead(since: since, sequence: sequence)) }
        // What the history no longer holds cannot be checked: a save it changed would pass.
        let forgotten = try historyPurgedThrough()
        if since < forgotten { throw ContextError(.historyForgotten(since: since, through: forgotten)) }
        let keys = Set(changes.map { WorkingSet.key($0.entity, $0.uuid) })
        var from = since
        while true {
            let page = try history(since: from, limit: 1000)
            for set in page {
                for c in set.changes where keys.contains(WorkingSet.key(c.entity, c.uuid)) {
                    throw ContextError(.changedSince(entity: c.entity, uuid: c.uuid, sequence: set.sequence, since: since))
                }
            }
            guard let last = page.last?.sequence, page.count == 1000 else { return }
            from = last
        }
    }

    static func change(_ p: Pending, names: [String]) -> RowChange? {
        let uuid = (p.new ?? p.old)?[Entity.identity]?.stringValue ?? ""
        switch (p.old, p.new) {
        case (nil, nil): return nil
        case (nil, let new?):
            return RowChange(store: p.store, entity: p.entity.name, uuid: uuid, kind: .insert, changedKeys: names, old: nil, new: new)
        case (let old?, nil):
            return RowChange(store: p.store, entity: p.entity.name, uuid: uuid, kind: .delete, changedKeys: names, old: old, new: nil)
        case (let old?, let new?):
            // Byte for byte: "é" → "e\u{301}" is a change the store must write.
            let keys = names.filter { name in
                switch (old[name], new[name]) {
                case (nil, nil): return false
                case (let a?, let b?): return !a.isIdentical(to: b)
                default: return true
                }
            }
            if keys.isEmpty { return nil }
            return RowChange(store: p.store, entity: p.entity.name, uuid: uuid, kind: .update, changedKeys: keys, old: old, new: new)
        }
    }

    // MARK: - Working out the changes

    /// The row as the save sees it so far: staged state first, then the store.
    private func current(_ e: Entity, _ uuid: String, store: String, in work: WorkingSet) throws(ContextError) -> Pending {
        if let p = work.rows[WorkingSet.key(e.name, uuid)] { return p }
        let handle = try handle(store, for: e.name)
        let values = try readRow(e, uuid: uuid, from: handle.db, handle: handle)?.values
        return Pending(entity: e, store: store, old: values, new: values)
    }

    /// A key for a row inserted without one: time-ordered (UUIDv7), so that a table keyed by
    /// them grows at its end.
    func newUUID() -> String {
        uuids.next(now: UInt64(max(0, WallClock.now() * 1000)), using: &random)
    }

    func stageInsert(
        _ entity: String, _ values: [String: AttributeValue], checked: Bool = false, into work: inout WorkingSet
    ) throws(ContextError) {
        let r = try route(entity)
        // From the entity's defaults, setting only what is given (a 1,000-row save hashes a
        // few names per row, not every attribute's twice); a value it refuses is looked for
        // again below, in attribute order, so that the error named is always the same one.
        if let template = insertTemplates[entity], let row = try? template.row(values, entity: entity, checked: checked, uuid: newUUID) {
            return try staged(row, entity: entity, route: r, into: &work)
        }
        var row: [String: AttributeValue] = [:]
        row.reserveCapacity(r.entity.attributes.count)  // filled once, never rehashed on the way
        if !checked {
            for key in values.keys where r.entity.attribute(key) == nil {
                throw ContextError(.unknownAttribute(entity: entity, attribute: key))
            }
        }
        for a in r.entity.attributes {
            if a.name == Entity.identity {
                let given = values[a.name] ?? .null
                row[a.name] = given.isNull ? .uuid(newUUID()) : try Values.normalize(given, for: a, in: entity)
                continue
            }
            if let v = values[a.name] {
                row[a.name] = try Values.normalize(v, for: a, in: entity, jsonChecked: checked)
            } else if let d = a.defaultValue {
                row[a.name] = d
            } else if a.isOptional {
                row[a.name] = .null
            } else {
                throw ContextError(.missingValue(entity: entity, attribute: a.name))
            }
        }
        try staged(row, entity: entity, route: r, into: &work)
    }

    /// A row to insert, its values checked, into the working set.
    private func staged(
        _ row: [String: AttributeValue], entity: String, route r: (entity: Entity, store: String), into work: inout WorkingSet
    ) throws(ContextError) {
        if isSynced(entity, store: r.store) { try Values.checkSynced(row, entity: entity, sealed: sealed(r.entity)) }
        // Both ways of making the row set it (given and checked, or made here).
        guard let uuid = row[Entity.identity]?.stringValue else { throw ContextError(.missingValue(entity: entity, attribute: Entity.identity)) }
        // A row the save has not touched is not read first: if it exists, the INSERT's primary
        // key refuses it and the save reports a duplicate.
        let key = WorkingSet.key(entity, uuid)
        var p = work.rows[key] ?? Pending(entity: r.entity, store: r.store, old: nil, new: nil)
        if p.new != nil { throw ContextError(.duplicate(entity: entity, uuid: uuid)) }
        p.new = row
        work.set(p, uuid: uuid, key: key)
    }

    func stageUpdate(
        _ entity: String, _ uuid: String, _ values: [String: AttributeValue], into work: inout WorkingSet
    ) throws(ContextError) {
        let r = try route(entity)
        var p = try current(r.entity, uuid, store: r.store, in: work)
        guard var row = p.new else { throw ContextError(.notFound(entity: entity, uuid: uuid)) }
        for (key, value) in values {
            guard let a = r.entity.attribute(key) else { throw ContextError(.unknownAttribute(entity: entity, attribute: key)) }
            if key == Entity.identity {
                guard value.stringValue == uuid else {
                    throw ContextError(.invalidValue(entity: entity, attribute: key, reason: "a row's uuid cannot change"))
                }
                continue
            }
            row[key] = try Values.normalize(value, for: a, in: entity)
        }
        if isSynced(entity, store: r.store) { try Values.checkSynced(row, entity: entity, sealed: sealed(r.entity)) }
        p.new = row
        work.set(p, uuid: uuid)
    }

    func stageDelete(_ entity: String, _ uuid: String, author: String, into work: inout WorkingSet) throws(ContextError) {
        let r = try route(entity)
        var p = try current(r.entity, uuid, store: r.store, in: work)
        // Deleted already by this save (a cascade from a row deleted before it): done, as it
        // would be had the operations come in the other order.
        if p.old != nil && p.new == nil { return }
        guard p.new != nil else { throw ContextError(.notFound(entity: entity, uuid: uuid)) }
        // Inserted by this save: an insert is not checked against the store before its INSERT,
        // which a delete now takes away; a row of that uuid in the store makes it a duplicate.
        let handle = try handle(r.store, for: entity)
        if p.old == nil, try readRow(r.entity, uuid: uuid, from: handle.db, handle: handle) != nil {
            throw ContextError(.duplicate(entity: entity, uuid: uuid))
        }
        p.new = nil
        work.set(p, uuid: uuid)
        for (source, link) in incoming[entity] ?? [] {
            // A delete that sync brings: within the synced store the deleting machine's own link
            // effects arrive by sync too (applying them again here would diverge from what it
            // did: a concurrent edit may have linked a row since); across stores, a running
            // session outlives its timer, as an orphan.
            if author == "sync", configuration(of: source.name) == configuration(of: entity) { continue }
            for linking in try linkingRows(source, link, to: uuid, in: work) {
                var rule = link.deleteRule
                // A cascade or deny is not obeyed: the linking row is kept, its link cleared where
                // nil is a value for it (a required link stays, dangling). A nullify or none rule
                // is what it says.
                if author == "sync", rule == .cascade || rule == .deny {
                    rule = source.attribute(link.attribute)?.isOptional == true ? .nullify : .none
                }
                switch rule {
                case .cascade:
                    try stageDelete(source.name, linking, author: author, into: &work)
                case .nullify:
                    try stageUpdate(source.name, linking, [link.attribute: .null], into: &work)
                case .deny:
                    throw ContextError(.deleteDenied(entity: entity, uuid: uuid, linkedFrom: source.name, count: 1))
                case .none:
                    break
                }
            }
        }
    }

    /// The uuids of `source` rows whose `link` attribute holds `uuid`, as the save sees them.
    private func linkingRows(_ source: Entity, _ link: Link, to uuid: String, in work: WorkingSet) throws(ContextError) -> [String] {
        let handle = try handle(try route(source.name).store, for: source.name)
        var found: [String] = []
        let sql = "SELECT \"uuid\" FROM \(SchemaSQL.quote(source.name)) WHERE \(SchemaSQL.quote(link.attribute)) = ?"
        do {
            let s = try handle.statement(sql)
            try s.bind(.string(uuid), at: 1)
            defer { s.reset() }
            while try s.step() { found.append(s.column(0, as: .string).stringValue ?? "") }
        } catch {
            throw ContextError(.database(error))
        }
        // Staged state wins over the store: skip rows already deleted or relinked, add rows staged
        // to link (in the order the save first touched them).
        var result: [String] = []
        for u in found {
            if let p = work.rows[WorkingSet.key(source.name, u)], p.new?[link.attribute]?.stringValue != uuid { continue }
            result.append(u)
        }
        let staged = work.rows(of: source.name, linkingBy: link.attribute, to: uuid).subtracting(result)
        result += staged.sorted { work.place(source.name, $0) < work.place(source.name, $1) }
        return result
    }
}

extension Context {
    /// Whether rows of `entity` (in `store`) sync: the history configuration's, outside the
    /// models that never leave the machine (`Options.unsyncedModels`, the sync worker's own).
    /// The attributes of `entity` the sync worker seals for the server.
    func sealed(_ entity: Entity) -> Set<String> {
        if let known = sealedAttributes[entity.name] { return known }
        let names = Set(entity.attributes.filter { $0.transformer == .encrypted }.map(\.name))
        sealedAttributes[entity.name] = names
        return names
    }

    func isSynced(_ entity: String, store: String) -> Bool {
        guard store == options.historyConfiguration else { return false }
        if let known = syncedEntities[entity] { return known }
        let synced = !options.unsyncedModels.contains(schema.entity(entity)?.model.name ?? "")
        syncedEntities[entity] = synced
        return synced
    }
}

/// What an insert of one entity starts from: every attribute with its default (null where it is
/// optional and has none), so that an insert sets only the values it is given.
struct InsertTemplate {
    private let defaults: [String: AttributeValue]
    private let attributes: [String: Attribute]
    /// The attributes an insert must give: no default, not optional (the uuid aside).
    private let required: [String]

    init(_ e: Entity) {
        var defaults: [String: AttributeValue] = [:]
        var attributes: [String: Attribute] = [:]
        var required: [String] = []
        for a in e.attributes {
            attributes[a.name] = a
            if a.name == Entity.identity {
                defaults[a.name] = .null  // a place for it: setting it never grows the row
            } else if let d = a.defaultValue {
                defaults[a.name] = d
            } else if a.isOptional {
                defaults[a.name] = .null
            } else {
                required.append(a.name)
            }
        }
        self.defaults = defaults
        self.attributes = attributes
        self.required = required
    }

    /// The row `values` make, checked; nil when one is refused (the caller finds which).
    func row(_ values: [String: AttributeValue], entity: String, checked: Bool, uuid: () -> String) throws(ContextError) -> [String: AttributeValue]? {
        for name in required where values[name] == nil { return nil }
        var row = defaults
        var identified = false
        for (key, value) in values {
            guard let a = attributes[key] else { return nil }
            if key == Entity.identity {
                guard !value.isNull else { continue }
                row[key] = try Values.normalize(value, for: a, in: entity)
                identified = true
            } else {
                row[key] = try Values.normalize(value, for: a, in: entity, jsonChecked: checked)
            }
        }
        if !identified { row[Entity.identity] = .uuid(uuid()) }
        return row
    }
}
