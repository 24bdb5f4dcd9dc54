import SeamJSON

/// Per-field versions: how concurrent edits of one record resolve, the same way on every
/// machine whatever order they arrive in. Pure.
///
/// A field's version is the time of the edit (microseconds since 1970) and the device that
/// made it, written `"%020d.DEVICE"` so that text order is version order: the greater version
/// wins, ties going to the greater device name. Edits of different fields never conflict.
public enum FieldVersion {
    /// The version of an edit at `time` (Unix seconds) on `device`.
    public static func stamp(time: Double, device: String) -> String {
        let micros = (time * 1_000_000).rounded()
        return stamp(micros: micros.isFinite ? Int64(min(max(micros, 0), 9e18)) : 0, device: device)
    }

    /// The server's record (fields and their versions; nil when it has none) with this
    /// machine's edits put over it: each key of `stamps` takes the local value when its version
    /// is greater than the server's. A record the server lacks gets every attribute.
    public static func merge(
        server: (fields: JSONObject, versions: JSONObject)?, row: JSONObject, stamps: [String: String], attributes: [String]
    ) -> (fields: JSONObject, versions: JSONObject) {
        var fields = server?.fields ?? [:]
        var versions = server?.versions ?? [:]
        for k in attributes {
            guard let mine = stamps[k] else {
                if server == nil { fields[k] = row[k] ?? .null }
                continue
            }
            if let theirs = versions[k]?.stringValue, theirs >= mine, server != nil { continue }
            fields[k] = row[k] ?? .null
            versions[k] = .string(mine)
        }
        return (fields, versions)
    }
}

extension FieldVersion {
    /// How far ahead of this machine's clock a version may be dated: more, and no clock wrote it
    /// (a rogue client of the zone, a broken clock), and it would win every edit of its field
    /// for as long — the record is set aside instead, and the server's version does not count
    /// when this machine merges an edit with it.
    public static let futureTolerance: Double = 86_400

    /// The version of an edit at `micros` (microseconds since 1970) on `device`.
    public static func stamp(micros: Int64, device: String) -> String {
        let digits = String(max(0, micros))
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "." + device
    }

    /// The time of `version`, in microseconds since 1970; nil when it is no version.
    public static func micros(of version: String) -> Int64? {
        // Read as bytes: an import checks every field's version of every record.
        var micros: Int64 = 0, digits = 0, negative = false
        for byte in version.utf8 {
            if byte == UInt8(ascii: ".") { return digits > 0 ? (negative ? -micros : micros) : nil }
            if digits == 0 && !negative && byte == UInt8(ascii: "-") { negative = true; continue }
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            let (times10, over1) = micros.multipliedReportingOverflow(by: 10)
            let (sum, over2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !over1 && !over2 else { return nil }
            micros = sum
            digits += 1
        }
        return nil
    }

    /// The versions of edits made after this machine had `seen` (a record's field versions, as
    /// the server holds them): each key's stamp, or, where the version seen is not older, one
    /// just after it. Clocks differ: an edit made after taking another machine's value, on a
    /// clock behind that machine's, would otherwise lose to the value it replaced. With
    /// `onlyOwn`, only versions of `device` itself are followed: this machine's earlier edits,
    /// whether or not it recorded that the server has them.
    ///
    /// A version no stamp can follow (its time the largest there is, or text that sorts after
    /// its own time's stamp) leaves the edit's stamp as it was.
    public static func following(_ seen: JSONObject, stamps: [String: String], device: String, onlyOwn: Bool = false) -> [String: String] {
        var out = stamps
        for (key, mine) in stamps {
            guard let theirs = seen[key]?.stringValue, theirs >= mine else { continue }
            if onlyOwn, !theirs.hasSuffix("." + device) { continue }
            guard let micros = micros(of: theirs), micros < Int64.max else { continue }
            let next = stamp(micros: micros + 1, device: device)
            if next > theirs { out[key] = next }
        }
        return out
    }
}
