import SeamJSON

/// An error reply: a fully qualified name and its parameters, as varlink defines them.
public struct VarlinkError: Error, Sendable, CustomStringConvertible {
    public var name: String
    public var parameters: JSONObject

    public init(_ name: String, _ parameters: JSONObject = [:]) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        let message = parameters["message"]?.stringValue
        return name + (message.map { ": \($0)" } ?? (parameters.isEmpty ? "" : " \(JSON.object(parameters))"))
    }

    // MARK: - org.varlink.service

    public static func interfaceNotFound(_ interface: String) -> VarlinkError {
        VarlinkError("org.varlink.service.InterfaceNotFound", ["interface": .string(interface)])
    }
    public static func methodNotFound(_ method: String) -> VarlinkError {
        VarlinkError("org.varlink.service.MethodNotFound", ["method": .string(method)])
    }
    public static func methodNotImplemented(_ method: String) -> VarlinkError {
        VarlinkError("org.varlink.service.MethodNotImplemented", ["method": .string(method)])
    }
    public static func invalidParameter(_ parameter: String) -> VarlinkError {
        VarlinkError("org.varlink.service.InvalidParameter", ["parameter": .string(parameter)])
    }
    public static let expectedMore = VarlinkError("org.varlink.service.ExpectedMore")

    // MARK: - org.seam.Store

    /// The request is well formed but wrong: unknown entity or attribute, bad predicate, bad value.
    public static func invalidRequest(_ message: String, field: String? = nil) -> VarlinkError {
        var p: JSONObject = ["message": .string(message)]
        if let field { p["field"] = .string(field) }
        return VarlinkError("org.seam.Store.InvalidRequest", p)
    }
    public static func notFound(entity: String, uuid: String) -> VarlinkError {
        VarlinkError("org.seam.Store.NotFound", ["entity": .string(entity), "uuid": .string(uuid),
                                                 "message": .string("no \(entity) with uuid \(uuid)")])
    }
    public static func conflict(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Store.Conflict", ["message": .string(message)])
    }
    public static func permissionDenied(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Store.PermissionDenied", ["message": .string(message)])
    }
    public static func unsupportedVersion(_ versions: [Int]) -> VarlinkError {
        VarlinkError("org.seam.Store.UnsupportedVersion", ["supported": .array(versions.map { .integer(Int64($0)) }),
                                                           "message": .string("this broker speaks protocol versions \(versions)")])
    }
    public static func storeFailure(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Store.StoreFailure", ["message": .string(message)])
    }
    /// A resume from a sequence number this broker has not reached (a store restored from an
    /// older copy, or a client's bug): subscribe afresh.
    public static func sequenceAhead(since: Int64, sequence: Int64) -> VarlinkError {
        VarlinkError("org.seam.Store.SequenceAhead", [
            "since": .integer(since), "sequence": .integer(sequence),
            "message": .string("cannot resume from sequence \(since): this broker is at \(sequence); subscribe without since"),
        ])
    }
    public static func limitReached(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Store.LimitReached", ["message": .string(message)])
    }
    /// The store that holds what the call needs is closed: migrating (with how far along),
    /// written by a newer build, or unreadable. The message says which, and what to do.
    public static func storeUnavailable(store: String, _ message: String) -> VarlinkError {
        VarlinkError("org.seam.Store.StoreUnavailable", ["store": .string(store), "message": .string(message)])
    }

    /// A query that costs more than seamd's limits allow: a predicate that costs too much per row
    /// (refused before it runs), or a statement that ran past its time budget (stopped). `limit`
    /// names the setting (`predicateCost`, `querySeconds`; `seamd.json`'s `limits`).
    public static func queryTooExpensive(_ message: String, limit: String) -> VarlinkError {
        VarlinkError("org.seam.Store.QueryTooExpensive", ["message": .string(message), "limit": .string(limit)])
    }

    /// A value (or a synced record, its values together) past its bound: `field` names it — the
    /// attribute, or its place in the Save (`inserts[2].values.name`) — and `limit` the bound in
    /// bytes.
    public static func valueTooLarge(_ message: String, field: String, limit: Int) -> VarlinkError {
        VarlinkError("org.seam.Store.ValueTooLarge", ["message": .string(message), "field": .string(field), "limit": .integer(Int64(limit))])
    }

    /// The store a save would write to can only be read (its file's permissions, a read-only
    /// mount); reads of it work.
    public static func storeReadOnly(store: String, path: String, _ message: String) -> VarlinkError {
        VarlinkError("org.seam.Store.StoreReadOnly", ["store": .string(store), "path": .string(path), "message": .string(message)])
    }

    // MARK: - org.seam.Migration

    /// A migration did not complete; the originals are in service at their old versions.
    public static func migrationFailed(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Migration.MigrationFailed", ["message": .string(message)])
    }

    // MARK: - org.seam.Maintenance

    /// A backup, check or restore did not complete; the message says what happened to the stores.
    public static func maintenanceFailed(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Maintenance.MaintenanceFailed", ["message": .string(message)])
    }

    // MARK: - org.seam.Sync

    public static func syncNotConfigured(_ message: String) -> VarlinkError {
        VarlinkError("org.seam.Sync.NotConfigured", ["message": .string(message)])
    }

    public static let shuttingDown = VarlinkError("org.seam.Store.ShuttingDown", ["message": .string("seamd is shutting down")])
}
