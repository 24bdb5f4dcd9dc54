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
        var s = Scanner(bytes: frame)
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
                if let text = s.plainString() {
                    id = .string(text)
                } else if let n = s.smallInteger() {
                    id = .integer(n)
                } else {
                    return nil
                }
            default:
                return nil
            }
        } while s.take(UInt8(ascii: ","))
        guard s.take(UInt8(ascii: "}")), s.atEnd, method != nil, let entity, let uuid else { return nil }
        self.entity = entity
        self.uuid = uuid
        self.id = id
    }

    private struct Scanner {
        let bytes: ArraySlice<UInt8>
        var pos: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            pos = bytes.startIndex
        }

        var atEnd: Bool { pos == bytes.endIndex }

        mutating func take(_ b: UInt8) -> Bool {
            guard pos < bytes.endIndex, bytes[pos] == b else { return false }
            pos += 1
            return true
        }

        /// A string of printable ASCII without `"` or `\` (so without escapes), or nil.
        mutating func plainString() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = pos
            while pos < bytes.endIndex {
                let b = bytes[pos]
                if b == UInt8(ascii: "\"") {
                    pos += 1
                    return String(decoding: bytes[start..<pos - 1], as: UTF8.self)
                }
                guard b >= 0x20, b < 0x7f, b != UInt8(ascii: "\\") else { return nil }
                pos += 1
            }
            return nil
        }

        /// A non-negative integer of 1 to 18 digits without a leading zero (so it fits an Int64
        /// and the general decoder reads the same integer), or nil.
        mutating func smallInteger() -> Int64? {
            let start = pos
            var n: Int64 = 0
            while pos < bytes.endIndex, bytes[pos] >= 0x30, bytes[pos] <= 0x39, pos - start < 18 {
                n = n * 10 + Int64(bytes[pos] - 0x30)
                pos += 1
            }
            let digits = pos - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            // More digits than allowed, or a number that goes on (a fraction, an exponent).
            guard pos < bytes.endIndex else { return n }
            switch bytes[pos] {
            case 0x30...0x39, UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: return n
            }
        }
    }
}
