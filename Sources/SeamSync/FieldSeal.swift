import CSodium
import SeamJSON
import SeamSchema
import SeamSyncSetup

/// The sealing of encrypted fields, byte for byte as `Protocol/sync.md` ("Encrypted fields")
/// specifies it; the one place libsodium is called.
///
/// A sealed field is the JSON object `{"box": B, "key": K, "sealed": 1}`: K the key's id, B the
/// standard base64 of a 24-byte random nonce followed by the XChaCha20-Poly1305 (IETF)
/// ciphertext and tag of the value's JSON text, with associated data binding it to its zone,
/// entity, uuid and attribute — so a box moved to another row or field does not open.
struct FieldSeal: Sendable {
    let key: ZoneKey
    let keyID: String
    /// The server role whose records these are.
    let zone: String
    /// The associated data's first bytes, the same for every field of the zone: `["seam-sealed-1",zone,`.
    private let associatedPrefix: [UInt8]

    static let nonceSize = 24
    static let tagSize = 16
    static let format: Int64 = 1

    init(key: ZoneKey, zone: String) {
        precondition(sodium_init() >= 0, "libsodium did not initialise")
        self.key = key
        self.keyID = key.id
        self.zone = zone
        var prefix: [UInt8] = []
        CanonicalJSON.array([.string("seam-sealed-1"), .string(zone)]).write(into: &prefix)
        prefix[prefix.count - 1] = UInt8(ascii: ",")  // the array goes on
        associatedPrefix = prefix
    }

    /// Why a sealed field does not open.
    enum OpenError: Error, Equatable {
        /// Sealed with another key (its id): the zone's key changed, or the field came from elsewhere.
        case otherKey(String)
        /// Not a sealed field of this format (`{"sealed":1,"key":…,"box":…}`), or a box too short.
        case malformed
        /// The box does not open: tampered with, truncated, or moved from another row or field.
        case forged
    }

    /// Whether `value` is a sealed field (the object of exactly `sealed`, `key` and `box`).
    static func isSealed(_ value: JSON) -> Bool {
        guard let o = value.objectValue else { return false }
        return o.count == 3 && o["sealed"] != nil && o["key"] != nil && o["box"] != nil
    }

    /// The associated data: the canonical JSON array `["seam-sealed-1", zone, entity, uuid, attribute]`.
    /// Written a field at a time on the prefix the zone's fields share, without a JSON value built.
    func associatedData(entity: String, uuid: String, attribute: String) -> [UInt8] {
        var out = recordPrefix(entity: entity, uuid: uuid)
        Self.finish(&out, attribute: attribute)
        return out
    }

    /// The associated data up to its attribute, the same for every field of one record.
    private func recordPrefix(entity: String, uuid: String) -> [UInt8] {
        var out = associatedPrefix
        out.reserveCapacity(out.count + entity.utf8.count + uuid.utf8.count + 64)
        CanonicalJSON.writeString(entity, into: &out)
        out.append(UInt8(ascii: ","))
        CanonicalJSON.writeString(uuid, into: &out)
        out.append(UInt8(ascii: ","))
        return out
    }

    /// A record's prefix (`recordPrefix`) finished with the attribute: its associated data.
    private static func finish(_ prefix: inout [UInt8], attribute: String) {
        CanonicalJSON.writeString(attribute, into: &prefix)
        prefix.append(UInt8(ascii: "]"))
    }

    /// The associated data of one record's fields, for sealing or opening them in turn: the
    /// record's prefix written once (when the first is asked for), each attribute after it.
    private struct RecordAssociatedData {
        let seal: FieldSeal
        let entity: String
        let uuid: String
        private var bytes: [UInt8] = []
        private var prefixCount = 0

        init(seal: FieldSeal, entity: String, uuid: String) {
            self.seal = seal
            self.entity = entity
            self.uuid = uuid
        }

        /// The associated data of the record's field `attribute`.
        mutating func of(_ attribute: String) -> [UInt8] {
            if bytes.isEmpty {
                bytes = seal.recordPrefix(entity: entity, uuid: uuid)
                prefixCount = bytes.count
            }
            bytes.removeSubrange(prefixCount...)
            FieldSeal.finish(&bytes, attribute: attribute)
            return bytes
        }
    }

    func seal(_ value: JSON, entity: String, uuid: String, attribute: String) -> JSON {
        seal(value, associatedData: associatedData(entity: entity, uuid: uuid, attribute: attribute))
    }

    /// A value sealed with its associated data (`associatedData`) as given.
    private func seal(_ value: JSON, associatedData ad: [UInt8]) -> JSON {
        let plain = value.encoded()
        // The nonce, then the ciphertext and its tag sealed right behind it, in one buffer.
        var sealed = [UInt8](repeating: 0, count: Self.nonceSize + plain.count + Self.tagSize)
        var boxLength: UInt64 = 0
        let status = sealed.withUnsafeMutableBufferPointer { b in
            randombytes_buf(b.baseAddress!, Self.nonceSize)
            return crypto_aead_xchacha20poly1305_ietf_encrypt(b.baseAddress! + Self.nonceSize, &boxLength, plain, UInt64(plain.count), ad,
                                                              UInt64(ad.count), nil, b.baseAddress!, key.bytes)
        }
        precondition(status == 0 && boxLength == UInt64(plain.count + Self.tagSize), "XChaCha20-Poly1305 refused to seal")
        return .object(["sealed": .integer(Self.format), "key": .string(keyID), "box": .string(Base64.encode(sealed))])
    }

    func open(_ sealed: JSON, entity: String, uuid: String, attribute: String) -> Result<JSON, OpenError> {
        open(sealed, associatedData: associatedData(entity: entity, uuid: uuid, attribute: attribute))
    }

    /// A sealed field opened with its associated data (`associatedData`) as given.
    private func open(_ sealed: JSON, associatedData ad: [UInt8]) -> Result<JSON, OpenError> {
        guard Self.isSealed(sealed), sealed["sealed"]?.int64Value == Self.format, let id = sealed["key"]?.stringValue,
              let text = sealed["box"]?.stringValue
        else { return .failure(.malformed) }
        guard id == keyID else { return .failure(.otherKey(id)) }
        guard let bytes = Base64.decode(text), bytes.count >= Self.nonceSize + Self.tagSize else { return .failure(.malformed) }
        let boxCount = bytes.count - Self.nonceSize
        var plain = [UInt8](repeating: 0, count: boxCount - Self.tagSize)
        var plainLength: UInt64 = 0
        // The nonce and the box read where they lie in the decoded bytes, not copied out.
        let opened = bytes.withUnsafeBufferPointer { b in
            crypto_aead_xchacha20poly1305_ietf_decrypt(&plain, &plainLength, nil, b.baseAddress! + Self.nonceSize, UInt64(boxCount),
                                                      ad, UInt64(ad.count), b.baseAddress!, key.bytes)
        }
        guard opened == 0 else { return .failure(.forged) }
        if Int(plainLength) < plain.count { plain.removeLast(plain.count - Int(plainLength)) }
        guard let value = try? JSON.decode(plain) else { return .failure(.malformed) }
        return .success(value)
    }

    // MARK: - Whole records

    /// `fields` with each of `encrypted` sealed (a field already sealed, or absent, as it is).
    func seal(_ fields: JSONObject, encrypted: Set<String>, entity: String, uuid: String) -> JSONObject {
        var out = fields
        var ad = RecordAssociatedData(seal: self, entity: entity, uuid: uuid)
        for name in encrypted {
            guard let value = fields[name], !Self.isSealed(value) else { continue }
            out[name] = seal(value, associatedData: ad.of(name))
        }
        return out
    }

    /// `fields` with every sealed field opened; the first that does not open, and why.
    func open(_ fields: JSONObject, entity: String, uuid: String) -> Result<JSONObject, FieldOpenFailure> {
        var out = fields
        var ad = RecordAssociatedData(seal: self, entity: entity, uuid: uuid)
        for (name, value) in fields where Self.isSealed(value) {
            switch open(value, associatedData: ad.of(name)) {
            case .success(let clear): out[name] = clear
            case .failure(let why): return .failure(FieldOpenFailure(field: name, reason: why))
            }
        }
        return .success(out)
    }
}

/// A sealed field of a record that did not open, and why.
struct FieldOpenFailure: Error, CustomStringConvertible {
    var field: String
    var reason: FieldSeal.OpenError

    var description: String {
        let name = "'\(field.prefix(64))'"
        switch reason {
        case .otherKey(let id):
            return "its field \(name) is sealed with another key (\(id.prefix(16))) than this machine's: the zone's key was changed on "
                + "another machine; join it again with its recovery phrase (seam sync setup URL)"
        case .malformed: return "its field \(name) is not a sealed field Seam can read"
        case .forged: return "its field \(name) does not open with this zone's key: it was tampered with, cut short, or moved from another "
            + "row or field"
        }
    }
}
