import SeamSchema

/// Checks and normalises values on their way into a store.
enum Values {
    /// The largest text, json or binary value accepted, in bytes.
    static let maxBytes = 1 << 20

    /// `value` as attribute `a` of `entity` stores it, or an error naming what is wrong.
    /// `jsonChecked`: a `json` value is text a JSON encoder wrote from a parsed tree
    /// (`SaveRequest.valuesChecked`), so its syntax is not checked again.
    static func normalize(_ value: AttributeValue, for a: Attribute, in entity: String, jsonChecked: Bool = false) throws(ContextError) -> AttributeValue {
        func wrong() -> ContextError {
            ContextError(.wrongType(entity: entity, attribute: a.name, expected: a.type, got: value.type?.rawValue ?? "nil"))
        }
        func checkSize(_ n: Int) throws(ContextError) {
            if n > maxBytes { throw ContextError(.valueTooLarge(entity: entity, attribute: a.name, bytes: n, limit: maxBytes)) }
        }
        // Computed dates too (a service's arithmetic on a hostile row): what RFC 3339 cannot
        // write, the wire would show as another date.
        func checkDate(_ d: Double) throws(ContextError) {
            guard AttributeValue.dateRange.contains(d) else {
                throw ContextError(.invalidValue(entity: entity, attribute: a.name, reason: AttributeValue.dateRangeText))
            }
        }
        if value.isNull {
            guard a.isOptional else { throw ContextError(.missingValue(entity: entity, attribute: a.name)) }
            return .null
        }
        switch (a.type, value) {
        case (.string, .string(let s)):
            try checkSize(s.utf8.count)
            // PostgreSQL, where sync keeps records, cannot hold it (in text or jsonb), and C
            // clients would end the text there: a record holding one would stop sync for good.
            if s.utf8.contains(0) {
                throw ContextError(.invalidValue(entity: entity, attribute: a.name, reason: "text cannot contain U+0000 (NUL)"))
            }
            return value
        case (.uuid, .uuid(let s)), (.uuid, .string(let s)):
            guard UUIDText.isCanonical(s) else {
                throw ContextError(.invalidValue(entity: entity, attribute: a.name, reason: "'\(s.prefix(60))' is not a lowercase uuid"))
            }
            return .uuid(s)
        case (.json, .json(let s)), (.json, .string(let s)):
            try checkSize(s.utf8.count)
            if !(jsonChecked && value.isJSON) {
                do { try JSONText.validate(s) } catch {
                    throw ContextError(.invalidValue(entity: entity, attribute: a.name, reason: error.description))
                }
            }
            // JSON null is no value, as `null` is on the wire; the history could not tell the two apart.
            if s.utf8.lazy.filter({ !Self.jsonSpace.contains($0) }).elementsEqual("null".utf8) {
                guard a.isOptional else { throw ContextError(.missingValue(entity: entity, attribute: a.name)) }
                return .null
            }
            // Nor in JSON, where only an escape (`\u0000`) can spell it.
            if s.utf8.contains(UInt8(ascii: "\\")), let value = try? JSONText.parse(s), value.holdsNUL {
                throw ContextError(.invalidValue(entity: entity, attribute: a.name, reason: "JSON text cannot hold U+0000 (NUL)"))
            }
            return .json(s)
        case (.integer, .integer): return value
        case (.bool, .bool): return value
        case (.double, .double(let d)), (.date, .date(let d)), (.date, .double(let d)):
            guard d.isFinite else { throw ContextError(.invalidValue(entity: entity, attribute: a.name, reason: "not a finite number")) }
            guard a.type == .date else { return .double(d) }
            try checkDate(d)
            // At the precision the wire carries: every machine then holds the very same double.
            return .date(DecimalSeconds.canonicalDate(d))
        case (.double, .integer(let i)): return .double(Double(i))
        case (.date, .integer(let i)):
            try checkDate(Double(i))
            return .date(Double(i))
        case (.binary, .binary(let b)):
            try checkSize(b.count)
            return value
        default:
            throw wrong()
        }
    }

    /// The most one value of a synced record (a row of the store that syncs) takes as JSON, and
    /// the most all of a record's values take together: a record must fit a frame (4 MiB) with
    /// room to spare on its way to and from the server, or one record would stop a zone's sync.
    static let syncedValueBytes = 256 << 10
    static let syncedRecordBytes = 1 << 20

    /// Refuses a synced `row` (whole, as it will be stored) whose values pass the bounds; the
    /// attributes in `sealed` count at the size they take sealed on the server.
    static func checkSynced(_ row: [String: AttributeValue], entity: String, sealed: Set<String> = []) throws(ContextError) {
        var total = 0
        var largest = (name: "", bytes: 0)
        for (name, value) in row {
            let n = jsonBytes(value)
            if n > syncedValueBytes {
                throw ContextError(.valueTooLarge(entity: entity, attribute: name, bytes: n, limit: syncedValueBytes))
            }
            total += (sealed.contains(name) ? sealedBytes(n) : n) + name.utf8.count + 4
            if n > largest.bytes { largest = (name, n) }
        }
        if total > syncedRecordBytes {
            throw ContextError(.recordTooLarge(entity: entity, attribute: largest.name, bytes: total, limit: syncedRecordBytes))
        }
    }

    /// The bytes a value of `n` bytes of JSON takes sealed (`Protocol/sync.md`, "Encrypted
    /// fields"): base64 of a 24-byte nonce, the text and a 16-byte tag, in its JSON object.
    static func sealedBytes(_ n: Int) -> Int { (n + 40 + 2) / 3 * 4 + 48 }

    /// The bytes `value` takes written as JSON (as the wire and the sync server hold it).
    static func jsonBytes(_ value: AttributeValue) -> Int {
        switch value {
        case .string(let s), .uuid(let s): return escapedBytes(s) + 2
        case .json(let s): return s.utf8.count
        case .binary(let b): return (b.count + 2) / 3 * 4 + 2
        default: return 32
        }
    }

    /// A string's UTF-8 bytes, with what escaping adds: `\"` and `\\` one more, a control
    /// character five more (`\u00XX`).
    static func escapedBytes(_ s: String) -> Int {
        var n = 0
        for b in s.utf8 {
            if b < 0x20 { n += 6 } else if b == 0x22 || b == 0x5C { n += 2 } else { n += 1 }
        }
        return n
    }

    /// The bytes JSON allows between tokens: space, tab, line feed, carriage return.
    private static let jsonSpace: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]

    /// Whether a string of `value` (a key or a value, at any depth) holds U+0000.
}
