import SeamJSON
import SeamSchema
import SeamSystem

/// A zone's key: the 32 bytes that seal its encrypted fields (`Protocol/sync.md`, "Encrypted
/// fields"), with the forms a person and the machine keep it in — a recovery phrase of 24 words
/// whose last word carries a checksum, and a 0600 file beside the password file.
public struct ZoneKey: Sendable, Equatable {
    public static let size = 32
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.size else { return nil }
        self.bytes = bytes
    }

    /// A new key from the kernel's generator.
    public static func generate() -> ZoneKey {
        var random = RandomBuffer()
        var bytes: [UInt8] = []
        for _ in 0..<(size / 8) { withUnsafeBytes(of: random.next()) { bytes += $0 } }
        return ZoneKey(bytes: bytes)!
    }

    /// The key's public name: 16 lowercase hex digits, the first 8 bytes of the SHA-256 of
    /// `seam-zone-key:` and the key. The server keeps it; a sealed field names it; it tells
    /// machines whether they hold the same key without saying anything of the key.
    public var id: String {
        SHA256.hash(Array("seam-zone-key:".utf8) + bytes).prefix(8).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }

    // MARK: - The recovery phrase

    /// The 2,048 words, each a consonant, a vowel sound and a consonant (`bab`, `zoux`): the
    /// word for an 11-bit number n is `consonants[n >> 7] + vowels[(n >> 4) & 7] + consonants[n & 15]`.
    static let consonants = ["b", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
    static let vowels = ["a", "e", "i", "o", "u", "ai", "ei", "ou"]

    static func word(_ n: Int) -> String { consonants[n >> 7] + vowels[(n >> 4) & 7] + consonants[n & 15] }

    static func number(_ word: Substring) -> Int? {
        for (c1, first) in consonants.enumerated() where word.hasPrefix(first) {
            for (c2, last) in consonants.enumerated() where word.hasSuffix(last) && word.count > 2 {
                let middle = word.dropFirst(first.count).dropLast(last.count)
                if let v = vowels.firstIndex(where: { $0 == middle }) { return c1 << 7 | v << 4 | c2 }
            }
        }
        return nil
    }

    /// The key and one checksum byte (the first of the key's SHA-256), 264 bits, read
    /// big-endian 11 at a time: 24 words.
    public var phrase: String {
        let all = bytes + [SHA256.hash(bytes)[0]]
        var words: [String] = []
        var acc = 0, bits = 0
        for byte in all {
            acc = acc << 8 | Int(byte)
            bits += 8
            while bits >= 11 {
                words.append(Self.word((acc >> (bits - 11)) & 2047))
                bits -= 11
                acc &= (1 << bits) - 1
            }
        }
        return words.joined(separator: " ")
    }

    /// What is wrong with a typed phrase.
    public struct PhraseError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The key a typed phrase holds: words separated by spaces or hyphens, in any case.
    public init(phrase text: String) throws(PhraseError) {
        let words = text.lowercased().split { $0 == " " || $0 == "-" || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard words.count == 24 else {
            throw PhraseError(description: "a recovery phrase has 24 words; this one has \(words.count)")
        }
        var numbers: [Int] = []
        for (i, w) in words.enumerated() {
            guard let n = Self.number(w) else {
                throw PhraseError(description: "word \(i + 1), '\(w.prefix(20))', is not a word of a recovery phrase: check it against the one "
                                  + "seam sync setup showed")
            }
            numbers.append(n)
        }
        var all: [UInt8] = []
        var acc = 0, bits = 0
        for n in numbers {
            acc = acc << 11 | n
            bits += 11
            while bits >= 8 {
                all.append(UInt8((acc >> (bits - 8)) & 255))
                bits -= 8
                acc &= (1 << bits) - 1
            }
        }
        let key = Array(all.prefix(Self.size))
        guard all.count == Self.size + 1, SHA256.hash(key)[0] == all[Self.size] else {
            throw PhraseError(description: "the phrase's checksum does not match: a word is mistyped or out of place")
        }
        self.bytes = key
    }

    // MARK: - The key file

    /// `sync.key` in the configuration directory, beside `sync.json` and `sync.pgpass`.
    public static func path(in directory: String) -> String { FileSystem.join(directory, "sync.key") }

    /// What is wrong with a key file.
    public struct FileError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The file's text: `seam-zone-key 1` and the key in hex, one line.
    public var fileText: String { "seam-zone-key 1 " + bytes.map { String($0, radix: 16).leftPadded(2) }.joined() + "\n" }

    /// Reads the key at `path`, refusing a file another user owns or that others may read.
    public static func read(_ path: String) throws(FileError) -> ZoneKey {
        guard let (mode, mine) = FileSystem.permissions(path) else {
            throw FileError(description: "\(path) is missing: this machine has no key for the zone; join it with its recovery phrase "
                            + "(seam sync setup URL, which asks for it)")
        }
        guard mine else { throw FileError(description: "\(path) belongs to another user: a key file must be yours alone") }
        guard mode & 0o077 == 0 else {
            throw FileError(description: "\(path) may be read by others (mode \(String(mode, radix: 8))): run chmod 600 \(path), and "
                            + "rotate the key (seam sync rotate-key) if someone else may have read it")
        }
        let text: [UInt8]
        do { text = try FileSystem.read(path) } catch { throw FileError(description: "cannot read \(path): \(error.message)") }
        let parts = String(decoding: text, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard parts.count == 3, parts[0] == "seam-zone-key", parts[1] == "1", parts[2].count == size * 2 else {
            throw FileError(description: "\(path) is not a Seam key file; set the key up again with its recovery phrase (seam sync setup URL)")
        }
        var bytes: [UInt8] = []
        var i = parts[2].startIndex
        while i < parts[2].endIndex {
            let j = parts[2].index(i, offsetBy: 2)
            guard let b = UInt8(parts[2][i..<j], radix: 16) else {
                throw FileError(description: "\(path) is not a Seam key file; set the key up again with its recovery phrase (seam sync setup URL)")
            }
            bytes.append(b)
            i = j
        }
        return ZoneKey(bytes: bytes)!
    }

    /// Writes the key to `path`, mode 0600, atomically.
    public func write(to path: String) throws(SystemError) {
        try FileSystem.writeAtomically(Array(fileText.utf8), to: path, mode: 0o600)
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
