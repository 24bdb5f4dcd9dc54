import SeamQuery
import SeamSchema
import SeamStore

/// Why a context refused a request. A failed save changes nothing in either store.
public struct ContextError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        case unknownEntity(String)
        case unknownAttribute(entity: String, attribute: String)
        case wrongType(entity: String, attribute: String, expected: AttributeType, got: String)
        case missingValue(entity: String, attribute: String)
        case valueTooLarge(entity: String, attribute: String, bytes: Int, limit: Int)
        /// A synced row whose values together pass the bound on a record (`attribute`: its largest).
        case recordTooLarge(entity: String, attribute: String, bytes: Int, limit: Int)
        case invalidValue(entity: String, attribute: String, reason: String)
        case notFound(entity: String, uuid: String)
        case duplicate(entity: String, uuid: String)
        case constraint(entity: String, detail: String)
        case deleteDenied(entity: String, uuid: String, linkedFrom: String, count: Int)
        /// A save with `unchangedSince` would change a row the history changed after it.
        case changedSince(entity: String, uuid: String, sequence: Int64, since: Int64)
        /// A save with `unchangedSince` older than the history kept: what changed after it is
        /// no longer known, so whether the rows changed cannot be told.
        case historyForgotten(since: Int64, through: Int64)
        /// A sequence number beyond the last save's (a client that read a store since restored
        /// from an older copy).
        case sequenceAhead(since: Int64, sequence: Int64)
        case snapshotUnsupported
        /// The store that holds the entity is closed: migrating, newer than this build, unreadable
        /// or damaged (`entity` is empty when no one entity is concerned).
        case storeUnavailable(store: String, entity: String, reason: String)
        /// The store's file can only be read (its permissions, a read-only mount): no save reaches it.
        case storeReadOnly(store: String, path: String, reason: String)
        /// A query that does not check, and the request member it is in (`predicate`, `sort`, `limit`).
        case query(QueryError, field: String = "predicate")
        case store(StoreError)
        case database(DatabaseError)
    }

    public var kind: Kind
    /// The place in the save's `operations` of the one being worked out when the error arose
    /// (its link rules' effects included); nil for errors of no one operation.
    public var operation: Int?
    public init(_ kind: Kind) { self.kind = kind }

    /// The bound in bytes a value (or a synced record) passed; nil for every other error.
    public var byteLimit: Int? {
        switch kind {
        case .valueTooLarge(_, _, _, let limit), .recordTooLarge(_, _, _, let limit): return limit
        default: return nil
        }
    }

    public var description: String {
        switch kind {
        case .unknownEntity(let e): return "no entity named '\(e)'"
        case .unknownAttribute(let e, let a): return "\(e) has no attribute '\(a)'"
        case .wrongType(let e, let a, let expected, let got):
            return "\(e).\(a) is of type \(expected.rawValue), not \(got)"
        case .missingValue(let e, let a): return "\(e).\(a) is required: give it a value (nil is none)"
        case .valueTooLarge(let e, let a, let bytes, let limit):
            return "\(e).\(a) is \(bytes) bytes; the limit is \(limit)"
        case .recordTooLarge(let e, let a, let bytes, let limit):
            return "\(e)'s values take \(bytes) bytes as JSON together, the most in '\(a)'; a synced record may take at most "
                + "\(limit) (each value at most \(Values.syncedValueBytes)), so that it fits the frames it syncs in"
        case .invalidValue(let e, let a, let reason): return "\(e).\(a): \(reason)"
        case .notFound(let e, let u): return "no \(e) with uuid \(u)"
        case .duplicate(let e, let u): return "a \(e) with uuid \(u) already exists"
        case .constraint(let e, let d): return "\(e): \(d)"
        case .deleteDenied(let e, let u, let from, let n):
            return "cannot delete \(e) \(u): \(n) \(from) row(s) link to it and the rule is deny"
        case .changedSince(let e, let u, let n, let since):
            return "\(e) \(u) was changed by save \(n), after sequence \(since): read what changed since then and save again"
        case .historyForgotten(let since, let through):
            return "the history after sequence \(since) is forgotten through \(through) (purged, or the sequence jumped at a "
                + "start that found saves lost or a store restored): whether the rows changed "
                + "since cannot be told; read them again and save with that sequence"
        case .sequenceAhead(let since, let n):
            return "sequence \(since) is beyond the last save (\(n)): the store is older than what was read from it"
        case .snapshotUnsupported:
            return "the in-memory store cannot pin a snapshot (SQLite's in-memory databases have one connection); "
                + "read without a snapshot, or use a store directory"
        case .storeUnavailable(let store, let entity, let reason):
            if entity.isEmpty { return "the \(store) store is not available: \(reason)" }
            return "\(entity) is in the \(store) store, which is not available: \(reason)"
        case .storeReadOnly(let store, let path, let reason):
            return "the \(store) store (\(path)) can only be read (\(reason)); nothing was saved. Make the file writable, "
                + "then restart seamd"
        case .query(let e, _): return "\(e)"
        case .store(let e): return "\(e)"
        case .database(let e): return "\(e)"
        }
    }
}
