/// Standard base64 (RFC 4648, with padding), used for binary values in canonical JSON and for
/// sealed fields on a sync server.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Each byte's value in the alphabet, 0xff for a byte outside it.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        alphabet.withUnsafeBufferPointer { a in
            var i = 0
            while i + 3 <= bytes.count {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out.append(a[Int(n >> 18 & 63)])
                out.append(a[Int(n >> 12 & 63)])
                out.append(a[Int(n >> 6 & 63)])
                out.append(a[Int(n & 63)])
                i += 3
            }
            let rest = bytes.count - i
            guard rest > 0 else { return }
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out.append(a[Int(n >> 18 & 63)])
            out.append(a[Int(n >> 12 & 63)])
            out.append(rest == 2 ? a[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes standard padded base64 (unpadded only when no padding is due); `nil` when the
    /// text is not valid base64: a byte outside the alphabet, padding other than one or two `=`
    /// at the end, or a length that is not a multiple of four with its padding.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode($0) }
    }

    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var end = bytes.count, padding = 0
        while end > 0 && padding < 3 && bytes[end - 1] == UInt8(ascii: "=") {
            end -= 1
            padding += 1
        }
        guard padding <= 2, (end + padding) % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(end / 4 * 3 + 2)
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            /// The values of the `count` bytes from `i`, as the high bits of a 24-bit group; nil
            /// if one is outside the alphabet.
            func group(_ i: Int, _ count: Int) -> UInt32? {
                var n: UInt32 = 0, bad: UInt8 = 0
                for k in 0..<count {
                    let v = table[Int(bytes[i + k])]
                    bad |= v
                    n |= UInt32(v) << UInt32(18 - 6 * k)
                }
                return bad & 0xc0 == 0 ? n : nil
            }
            var i = 0
            while i + 4 <= end {
                guard let n = group(i, 4) else { return nil }
                out.append(UInt8(n >> 16 & 0xff))
                out.append(UInt8(n >> 8 & 0xff))
                out.append(UInt8(n & 0xff))
                i += 4
            }
            let rest = end - i  // 0, or 2 or 3 before one or two `=`
            if rest > 0 {
                guard let n = group(i, rest) else { return nil }
                out.append(UInt8(n >> 16 & 0xff))
                if rest == 3 { out.append(UInt8(n >> 8 & 0xff)) }
            }
            return out
        }
    }
}
