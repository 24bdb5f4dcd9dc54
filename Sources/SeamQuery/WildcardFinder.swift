/// Finds a LIKE segment holding `?` (literal text and `?`, no `*`) at its leftmost place in a
/// text, by bit-parallel matching (Shift-And) over Unicode scalars.
///
/// Bit `j` of the state says that the segment's first `j + 1` characters match the text's
/// characters just read; each character read shifts the state one place and keeps the bits
/// whose position holds that character or `?`. A text therefore costs its length in characters
/// times ⌈segment / 64⌉ words, however the segment is made: no backtracking.
///
/// The masks stay in proportion to the segment: a character appearing at least once per word
/// of state has a mask of its own; a rarer one keeps only its positions.
struct WildcardFinder: Sendable {
    /// The segment's length in characters.
    private let count: Int
    private let words: Int
    /// The positions of `?`.
    private let anyMask: [UInt64]
    /// For each frequent character, the offset of its mask (`?` included) in `masks`.
    private let dense: [UInt32: Int]
    private let masks: [UInt64]
    /// For each rare character, its positions.
    private let sparse: [UInt32: [Int]]

    init(_ segment: [LikePattern.Piece]) {
        var positions: [UInt32: [Int]] = [:]
        var anyPositions: [Int] = []
        var count = 0
        for piece in segment {
            switch piece {
            case .one:
                anyPositions.append(count)
                count += 1
            case .literal(let bytes):
                for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
                    positions[scalar.value, default: []].append(count)
                    count += 1
                }
            case .any:
                preconditionFailure("a segment holds no *")
            }
        }
        precondition(count > 0, "a segment between two * is never empty")
        let words = (count + 63) / 64
        func mask(_ bits: [Int], over base: [UInt64]) -> [UInt64] {
            var mask = base
            for p in bits { mask[p >> 6] |= 1 << UInt64(p & 63) }
            return mask
        }
        let anyMask = mask(anyPositions, over: [UInt64](repeating: 0, count: words))
        var dense: [UInt32: Int] = [:]
        var masks: [UInt64] = []
        var sparse: [UInt32: [Int]] = [:]
        for (scalar, at) in positions {
            if at.count >= words {
                dense[scalar] = masks.count
                masks += mask(at, over: anyMask)
            } else {
                sparse[scalar] = at
            }
        }
        self.count = count
        self.words = words
        self.anyMask = anyMask
        self.dense = dense
        self.masks = masks
        self.sparse = sparse
    }

    /// Where the leftmost match at or after `from` ends, if one lies wholly before `limit`.
    /// `from` is the first byte of a character; with `folded`, the text is ASCII-folded as read.
    func firstEnd(in text: UnsafeBufferPointer<UInt8>, from: Int, before limit: Int, folded: Bool) -> Int? {
        var state = [UInt64](repeating: 0, count: words)
        var shifted = state
        let top = (count - 1) >> 6
        let topBit: UInt64 = 1 << UInt64((count - 1) & 63)
        var i = from
        while i < limit {
            let (scalar, next) = Self.scalar(in: text, at: i, folded: folded)
            guard next <= limit else { return nil }
            var carry: UInt64 = 1
            for w in 0..<words {
                let v = state[w]
                shifted[w] = v << 1 | carry
                carry = v >> 63
            }
            if let offset = dense[scalar] {
                for w in 0..<words { state[w] = shifted[w] & masks[offset + w] }
            } else {
                for w in 0..<words { state[w] = shifted[w] & anyMask[w] }
                for p in sparse[scalar] ?? [] {
                    let bit: UInt64 = 1 << UInt64(p & 63)
                    state[p >> 6] |= shifted[p >> 6] & bit
                }
            }
            if state[top] & topBit != 0 { return next }
            i = next
        }
        return nil
    }

    /// The character starting at `i` and where the next one starts (never past the text).
    private static func scalar(in text: UnsafeBufferPointer<UInt8>, at i: Int, folded: Bool) -> (UInt32, Int) {
        let lead = text[i]
        if lead < 0x80 { return (UInt32(folded ? ASCII.fold(lead) : lead), i + 1) }
        let length = UTF8Validation.scalarLength(lead: lead)
        let end = min(text.count, i + length)
        var value = UInt32(lead) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
        for k in (i + 1)..<max(i + 1, end) { value = value << 6 | UInt32(text[k] & 0x3F) }
        return (value, end)
    }
}
