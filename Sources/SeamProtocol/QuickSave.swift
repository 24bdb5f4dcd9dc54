import SeamJSON

/// A save — the hottest write — recognised from its frame's bytes, without building a JSON
/// tree: `{"method":"org.seam.Store.Save","parameters":{"inserts":[…],"updates":[…],"deletes":[…]}}`,
/// members in any order, each list optional, with an optional `id` (as `QuickFetch` takes it)
/// an optional `unchangedSince` (a non-negative integer: the sync worker's saves carry one) and an
/// optional `reply` (a plain string: which one is the broker's to check).
/// An insert is `{"entity":E,"values":{…}}`, an update `{"entity":E,"uuid":U,"values":{…}}`, a
/// delete `{"entity":E,"uuid":U}`; a value is a string, a non-negative integer of up to 18
/// digits, `true`, `false` or `null` — or, for a `json` attribute, an array or object of those
/// written as `JSON.encoded()` writes it, kept as its text (`FrameScanner.canonicalContainer`):
/// a Session's steps go from the frame's bytes to the store without a JSON tree.
///
/// Recognition is as narrow as `QuickFetch`'s: no whitespace, strings of printable ASCII without
/// escapes, no other member anywhere, no member twice (values included), no number with a sign,
/// a fraction or an exponent. Whatever it recognises means exactly what the general path
/// (`JSON.decode`, then `Call`, then the broker's reading of `parameters`) reads from the same
/// bytes — a test checks that on every frame it accepts — and anything else returns nil and
/// takes the general path, errors included.
public struct QuickSave: Sendable, Equatable {
    /// One insert, update or delete, as the frame names it.
    public struct Item: Sendable, Equatable {
        public var entity: String
        /// Updates and deletes only.
        public var uuid: String?
        /// Inserts and updates only: names and values, in the frame's order.
        public var values: [Value]

        public init(entity: String, uuid: String? = nil, values: [Value] = []) {
            self.entity = entity
            self.uuid = uuid
            self.values = values
        }
    }

    public struct Value: Sendable, Equatable {
        /// A value as the frame holds it.
        public enum Content: Sendable, Equatable {
            /// A string, a small integer, `true`, `false` or `null`, as the general decoder reads it.
            case scalar(JSON)
            /// An array or object (a `json` attribute's value), as its text, which is exactly
            /// what `JSON.encoded()` writes of the value the general decoder reads.
            case container(String)
        }

        public var name: String
        public var content: Content

        public init(_ name: String, _ value: JSON) {
            self.name = name
            content = .scalar(value)
        }

        public init(_ name: String, container text: String) {
            self.name = name
            content = .container(text)
        }
    }

    public var inserts: [Item] = []
    public var updates: [Item] = []
    public var deletes: [Item] = []
    public var unchangedSince: Int64?
    /// The `reply` parameter's text, when given.
    public var reply: String?
    public var id: JSON?

    public static let method = "org.seam.Store.Save"

    public init(inserts: [Item] = [], updates: [Item] = [], deletes: [Item] = [], unchangedSince: Int64? = nil,
                reply: String? = nil, id: JSON? = nil) {
        self.inserts = inserts
        self.updates = updates
        self.deletes = deletes
        self.unchangedSince = unchangedSince
        self.reply = reply
        self.id = id
    }

    public init?(_ frame: ArraySlice<UInt8>) {
        var s = FrameScanner(bytes: frame)
        var sawMethod = false, sawParameters = false, sawID = false
        guard s.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = s.plainString(), s.take(UInt8(ascii: ":")) else { return nil }
            switch key {
            case "method" where !sawMethod:
                guard s.plainString() == Self.method else { return nil }
                sawMethod = true
            case "parameters" where !sawParameters:
                sawParameters = true
                guard parseParameters(&s) else { return nil }
            case "id" where !sawID:
                sawID = true
                guard let id = s.plainID() else { return nil }
                self.id = id
            default:
                return nil
            }
        } while s.take(UInt8(ascii: ","))
        guard s.take(UInt8(ascii: "}")), s.atEnd, sawMethod, sawParameters else { return nil }
    }

    /// `{"inserts":[…],"updates":[…],"deletes":[…],"unchangedSince":N,"reply":"…"}`, each member at
    /// most once.
    private mutating func parseParameters(_ s: inout FrameScanner) -> Bool {
        guard s.take(UInt8(ascii: "{")) else { return false }
        if s.take(UInt8(ascii: "}")) { return true }
        var seen: Set<String> = []
        repeat {
            guard let key = s.plainString(), s.take(UInt8(ascii: ":")), seen.insert(key).inserted else { return false }
            let kind: Int
            switch key {
            case "inserts": kind = 0
            case "updates": kind = 1
            case "deletes": kind = 2
            case "unchangedSince":
                guard let since = s.smallInteger() else { return false }
                unchangedSince = since
                continue
            case "reply":
                guard let text = s.plainString() else { return false }
                reply = text
                continue
            default: return false
            }
            guard let items = Self.parseItems(&s, kind: kind) else { return false }
            switch kind {
            case 0: inserts = items
            case 1: updates = items
            default: deletes = items
            }
        } while s.take(UInt8(ascii: ","))
        return s.take(UInt8(ascii: "}"))
    }

    /// `[item,…]`: an insert (kind 0) has `entity` and `values`, an update (1) `entity`, `uuid`
    /// and `values`, a delete (2) `entity` and `uuid`; nothing else.
    private static func parseItems(_ s: inout FrameScanner, kind: Int) -> [Item]? {
        guard s.take(UInt8(ascii: "[")) else { return nil }
        var items: [Item] = []
        if s.take(UInt8(ascii: "]")) { return items }
        repeat {
            guard s.take(UInt8(ascii: "{")) else { return nil }
            var entity: String?, uuid: String?, values: [Value]?
            repeat {
                guard let key = s.plainString(), s.take(UInt8(ascii: ":")) else { return nil }
                switch key {
                case "entity" where entity == nil:
                    guard let text = s.plainString() else { return nil }
                    entity = text
                case "uuid" where uuid == nil && kind > 0:
                    guard let text = s.plainString() else { return nil }
                    uuid = text
                case "values" where values == nil && kind < 2:
                    guard let parsed = parseValues(&s) else { return nil }
                    values = parsed
                default:
                    return nil
                }
            } while s.take(UInt8(ascii: ","))
            guard s.take(UInt8(ascii: "}")), let entity, (kind == 0) == (uuid == nil), (kind == 2) == (values == nil) else { return nil }
            items.append(Item(entity: entity, uuid: uuid, values: values ?? []))
        } while s.take(UInt8(ascii: ","))
        return s.take(UInt8(ascii: "]")) ? items : nil
    }

    /// The most values one row may have here: the check for a repeated name is a linear scan,
    /// which a row of 400,000 names (a 4 MiB frame) would make quadratic, on the broker's
    /// thread, before anything knows who sent it. More go the general path.
    public static let maxValuesPerRow = 64

    /// `{"name":value,…}`, each name once.
    private static func parseValues(_ s: inout FrameScanner) -> [Value]? {
        guard s.take(UInt8(ascii: "{")) else { return nil }
        var values: [Value] = []
        if s.take(UInt8(ascii: "}")) { return values }
        repeat {
            guard values.count < maxValuesPerRow, let name = s.plainString(), s.take(UInt8(ascii: ":")),
                  !values.contains(where: { $0.name == name }) else { return nil }
            if let value = s.plainScalar() {
                values.append(Value(name, value))
            } else if let text = s.canonicalContainer() {
                values.append(Value(name, container: text))
            } else {
                return nil
            }
        } while s.take(UInt8(ascii: ","))
        return s.take(UInt8(ascii: "}")) ? values : nil
    }
}
