import SeamSchema

/// Writes changes as the history keeps them: the text of
/// `JSONValue.array(changes.map(RowCoding.encode)).minified`, byte for byte, straight into bytes.
///
/// The history of a 1,000-row save is written so, on the path every other writer of its store
/// waits behind, so nothing here builds a tree or a string per value: each entity's keys are
/// sorted and written once (`Layout`), an insert's `changedKeys` (every attribute, the same for
/// each row) once, numbers go in as digits, and a `json` value already in canonical form (no
/// space, no escape, keys in order: what a client's encoder writes for the timers' steps) goes
/// in as it is; any other is parsed and written canonically.
struct HistoryText {
    /// An entity's keys as its last row had them, sorted by their UTF-8 bytes, each written
    /// `"key":`; and the last `changedKeys` written for it, with its bytes.
    private struct Layout {
        var keys: [String] = []
        var written: [[UInt8]] = []
        var changedKeys: [String] = []
        var changedKeysText: [UInt8] = []
        /// The order its rows' values come in, and a place for each while they are put in order.
        var order = IterationOrder()
        var sorted: [AttributeValue] = []

        mutating func sort(_ newKeys: some Sequence<String>) {
            keys = newKeys.sorted(by: CanonicalJSON.utf8Less)
            written = keys.map { key in
                var bytes: [UInt8] = []
                CanonicalJSON.writeString(key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                return bytes
            }
        }
    }

    private var layouts: [String: Layout] = [:]

    /// `changes` as one JSON array.
    mutating func text(of changes: [RowChange]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(changes.count * 320)
        out.append(UInt8(ascii: "["))
        for (i, change) in changes.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            write(change, into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// One change, as `text(of:)` writes each (a save in steps writes its history a few changes
    /// at a time, `Context+Steps`). Members in the order of their keys' bytes: changedKeys,
    /// entity, kind, new, old, store, uuid.
    mutating func write(_ change: RowChange, into out: inout [UInt8]) {
        var layout = layouts.removeValue(forKey: change.entity) ?? Layout()
        out.append(contentsOf: #"{"changedKeys":"#.utf8)
        if change.changedKeys != layout.changedKeys || layout.changedKeysText.isEmpty {
            layout.changedKeys = change.changedKeys
            layout.changedKeysText = [UInt8(ascii: "[")]
            for (k, key) in change.changedKeys.enumerated() {
                if k > 0 { layout.changedKeysText.append(UInt8(ascii: ",")) }
                CanonicalJSON.writeString(key, into: &layout.changedKeysText)
            }
            layout.changedKeysText.append(UInt8(ascii: "]"))
        }
        out.append(contentsOf: layout.changedKeysText)
        out.append(contentsOf: #","entity":"#.utf8)
        CanonicalJSON.writeString(change.entity, into: &out)
        out.append(contentsOf: #","kind":"#.utf8)
        CanonicalJSON.writeString(change.kind.rawValue, into: &out)
        if let new = change.new {
            out.append(contentsOf: #","new":"#.utf8)
            Self.write(new, layout: &layout, into: &out)
        }
        if let old = change.old {
            out.append(contentsOf: #","old":"#.utf8)
            Self.write(old, layout: &layout, into: &out)
        }
        out.append(contentsOf: #","store":"#.utf8)
        CanonicalJSON.writeString(change.store, into: &out)
        out.append(contentsOf: #","uuid":"#.utf8)
        CanonicalJSON.writeString(change.uuid, into: &out)
        out.append(UInt8(ascii: "}"))
        layouts[change.entity] = layout
    }

    /// One row, members in the order of their keys' bytes (`RowCoding.encode(values)`'s).
    private static func write(_ values: [String: AttributeValue], layout: inout Layout, into out: inout [UInt8]) {
        if layout.sorted.count != values.count { layout.sorted = Array(repeating: .null, count: values.count) }
        var sorted = layout.sorted
        layout.sorted = []  // held here alone while filled: no copy on write
        if !layout.order.forEach(values, in: layout.keys, { place, value in sorted[place] = value }) {
            // Not the keys of the row before: sort this row's, and put it in order again.
            layout.sort(values.keys)
            _ = layout.order.forEach(values, in: layout.keys) { place, value in sorted[place] = value }
        }
        out.append(UInt8(ascii: "{"))
        for i in sorted.indices {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: layout.written[i])
            write(sorted[i], into: &out)
        }
        out.append(UInt8(ascii: "}"))
        layout.sorted = sorted
    }

    /// One value as `RowCoding.encode(value).write(into:)` writes it.
    private static func write(_ value: AttributeValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .string(let s), .uuid(let s): CanonicalJSON.writeString(s, into: &out)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .integer(let i): writeDigits(i, into: &out)
        case .double(let d), .date(let d):
            if d == d.rounded() && abs(d) < 1e15 { writeDigits(Int64(d), into: &out) } else { out.append(contentsOf: "\(d)".utf8) }
        case .json(let text) where JSONText.isCanonical(text): out.append(contentsOf: text.utf8)
        case .binary, .json: RowCoding.encode(value).write(into: &out)
        }
    }

    /// `String(i)`'s bytes, without the string.
    private static func writeDigits(_ i: Int64, into out: inout [UInt8]) {
        if i < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 20 digits at most, kept off the heap
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            out.append(contentsOf: buffer[(20 - n)..<20])
        }
    }
}
