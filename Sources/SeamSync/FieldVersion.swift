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
        let micros = max(0, Int64((time * 1_000_000).rounded()))
        let digits = String(micros)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "." + device
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
