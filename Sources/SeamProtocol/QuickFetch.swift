import SeamJSON

/// A fetch by uuid — the hottest call — recognised from its frame's bytes, without building a
/// JSON tree: `{"method":"org.seam.Store.Fetch","parameters":{"entity":E,"uuid":U}}`, members
/// in any order, with an optional `id` (a string, or an integer of up to 18 digits).
///
/// Recognition is deliberately narrow: no whitespace, strings of printable ASCII without
/// escapes, no other member anywhere (`more`, `oneway`, `fields`…), no member twice. Whatever
/// it recognises means exactly what the general path (`JSON.decode`, then `Call`) reads from
/// the same bytes — a test checks that on every frame it accepts — and anything else returns
/// nil and takes the general path, errors included.
public struct QuickFetch: Sendable, Equatable {
    public var entity: String
    public var uuid: String
    public var id: JSON?

    public static let method = "org.seam.Store.Fetch"

    public init(entity: String, uuid: String, id: JSON? = nil) {
        self.entity = entity
        self.uuid = uuid
        self.id = id
    }

    public init?(_ frame: ArraySlice<UInt8>) {
        var s = FrameScanner(bytes: frame)
        var method: String?, entity: String?, uuid: String?, id: JSON?
        var sawParameters = false, sawID = false
        guard s.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = s.plainString() else { return nil }
            guard s.take(UInt8(ascii: ":")) else { return nil }
            switch key {
            case "method" where method == nil:
                guard let m = s.plainString(), m == Self.method else { return nil }
                method = m
            case "parameters" where !sawParameters:
                sawParameters = true
                guard s.take(UInt8(ascii: "{")) else { return nil }
                repeat {
                    guard let name = s.plainString(), s.take(UInt8(ascii: ":")), let value = s.plainString() else { return nil }
                    switch name {
                    case "entity" where entity == nil: entity = value
                    case "uuid" where uuid == nil: uuid = value
                    default: return nil
                    }
                } while s.take(UInt8(ascii: ","))
                guard s.take(UInt8(ascii: "}")), entity != nil, uuid != nil else { return nil }
            case "id" where !sawID:
                sawID = true
                guard let plain = s.plainID() else { return nil }
                id = plain
            default:
                return nil
            }
        } while s.take(UInt8(ascii: ","))
        guard s.take(UInt8(ascii: "}")), s.atEnd, method != nil, let entity, let uuid else { return nil }
        self.entity = entity
        self.uuid = uuid
        self.id = id
    }
}
