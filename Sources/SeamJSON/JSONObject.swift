/// The members of a JSON object: keys in the order they were written or added, each key once.
///
/// Lookup by key scans the members while there are at most `indexThreshold` of them (a broker
/// message or a row has fewer, and a scan of a few short keys beats hashing them); a larger
/// object keeps a hash index beside its members. Keys compare by their UTF-8 bytes.
///
/// Equality ignores member order (JSON objects are unordered); iteration and encoding follow it.
public struct JSONObject: Sendable {
    /// A member: its key and value.
    public typealias Element = (key: String, value: JSON)
    public typealias Key = String
    public typealias Value = JSON

    /// The member count above which an object keeps a hash index. Measured here (`seam-bench
    /// json`): a scan costs 40–50 ns per lookup up to 14 members and 130 ns at 32, a hashed lookup
    /// about 40 ns, but building the index costs about 60 ns per member, so the index pays only
    /// when most keys of a large object are looked up; the broker reads a few keys of each message.
    static let indexThreshold = 32

    /// A member as stored: a struct rather than the `Element` tuple, whose destruction goes
    /// through the runtime's generic tuple code.
    struct Member {
        var key: String
        var value: JSON
    }

    private(set) var members: [Member]
    private var index: [IndexKey: Int]?

    /// An empty object.
    public init() {
        members = []
        index = nil
    }

    /// An object of `members`, in their order.
    ///
    /// - Precondition: no key appears twice (as with `Dictionary(uniqueKeysWithValues:)`).
    public init(uniqueKeysWithValues members: some Sequence<(String, JSON)>) {
        self.init()
        for (key, value) in members {
            precondition(insertNew(key, value), "JSONObject: duplicate key \"\(key)\"")
        }
    }

    /// Members that the caller has checked are unique, with the index the parser built for them
    /// when there are more than `indexThreshold`.
    init(uncheckedMembers members: [Member], index: [IndexKey: Int]?) {
        self.members = members
        self.index = index
    }

    /// This object's members in the order of `positions`, a permutation of its positions (say,
    /// the one that sorts its keys, worked out once for many objects with the same keys).
    public func reordered(_ positions: [Int]) -> JSONObject {
        precondition(positions.count == members.count, "JSONObject.reordered: not a permutation of the members")
        let moved = positions.map { members[$0] }
        return JSONObject(uncheckedMembers: moved, index: Self.makeIndex(moved))
    }

    /// The position of the member `key`, or `nil`.
    public func index(forKey key: String) -> Int? {
        if let index { return index[IndexKey(key)] }
        return members.firstIndex { IndexKey.bytesEqual($0.key, key) }
    }

    /// The value of the member `key`; setting `nil` removes the member, setting a new key
    /// appends it, setting an existing key replaces its value in place.
    public subscript(key: String) -> JSON? {
        get {
            guard let position = index(forKey: key) else { return nil }
            return members[position].value
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// The members whose key `belongs` says true of, and the others, each in their order: two
    /// objects built without looking a key up (the keys of one object are unique already).
    public func partitioned(by belongs: (String) -> Bool) -> (matching: JSONObject, others: JSONObject) {
        var matching: [Member] = [], others: [Member] = []
        matching.reserveCapacity(members.count)
        for member in members {
            if belongs(member.key) { matching.append(member) } else { others.append(member) }
        }
        return (JSONObject(uncheckedMembers: matching, index: Self.makeIndex(matching)),
                JSONObject(uncheckedMembers: others, index: Self.makeIndex(others)))
    }

    /// Sets the value of `key` (appending it when new) and returns the value it replaced.
    @discardableResult
    public mutating func updateValue(_ value: JSON, forKey key: String) -> JSON? {
        if let position = index(forKey: key) {
            let old = members[position].value
            members[position].value = value
            return old
        }
        appendNew(key, value)
        return nil
    }

    /// Removes the member `key` and returns its value. O(n): later members move down.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSON? {
        guard let position = index(forKey: key) else { return nil }
        let old = members.remove(at: position).value
        index = Self.makeIndex(members)
        return old
    }

    /// The keys, in order.
    public var keys: LazyMapCollection<JSONObject, String> { lazy.map(\.key) }

    /// The values, in order.
    public var values: LazyMapCollection<JSONObject, JSON> { lazy.map(\.value) }

    // MARK: - Building

    /// Appends a member unless its key is present; returns whether it did.
    @discardableResult
    mutating func insertNew(_ key: String, _ value: JSON) -> Bool {
        guard index(forKey: key) == nil else { return false }
        appendNew(key, value)
        return true
    }

    /// Appends a member whose key is known to be absent.
    private mutating func appendNew(_ key: String, _ value: JSON) {
        members.append(Member(key: key, value: value))
        if index != nil {
            index?[IndexKey(key)] = members.count - 1
        } else if members.count > Self.indexThreshold {
            index = Self.makeIndex(members)
        }
    }

    /// The index for `members`, or `nil` when they are few enough to scan.
    static func makeIndex(_ members: some Collection<Member>) -> [IndexKey: Int]? {
        guard members.count > indexThreshold else { return nil }
        var built = [IndexKey: Int](minimumCapacity: members.count)
        for (position, member) in members.enumerated() { built[IndexKey(member.key)] = position }
        return built
    }
}

// MARK: - Collection

extension JSONObject: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { members.count }
    public subscript(position: Int) -> Element {
        let member = members[position]
        return (member.key, member.value)
    }
}

// MARK: - Equality and hashing

extension JSONObject: Hashable {
    /// Same keys (by bytes) with equal values, in any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for member in lhs.members {
            let (key, value) = (member.key, member.value)
            guard let other = rhs[key], other == value else { return false }
        }
        return true
    }

    /// Order-independent: the sum of the members' own hashes.
    public func hash(into hasher: inout Hasher) {
        var sum = 0
        for member in members {
            var memberHasher = Hasher()
            memberHasher.combine(member.key)
            memberHasher.combine(member.value)
            sum &+= memberHasher.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(sum)
    }
}

// MARK: - Literals and text

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// - Precondition: no key appears twice.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self.init(uniqueKeysWithValues: elements)
    }
}

extension JSONObject: CustomStringConvertible {
    /// The compact encoding, as text.
    public var description: String { JSON.object(self).description }
}

// MARK: - Keys

extension JSONObject {
    /// A key in the hash index: equal when the UTF-8 bytes are equal.
    struct IndexKey: Hashable {
        let string: String

        init(_ string: String) { self.string = string }

        static func == (lhs: IndexKey, rhs: IndexKey) -> Bool { bytesEqual(lhs.string, rhs.string) }

        /// Hashes the bytes that `==` compares. `String`'s own hash is of the canonical form, so
        /// keys spelled differently but equivalent (é, and e with U+0301) would all collide:
        /// 85,000 such keys in one 4 MiB frame made building the index take 23 s.
        func hash(into hasher: inout Hasher) {
            let hashed: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            if hashed == nil {  // rarely (a bridged string): the same bytes, copied
                Array(string.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }

        /// Whether two strings have the same UTF-8 bytes. Swift's `==` also equates canonically
        /// equivalent spellings, which JSON keys (and SQLite) keep apart.
        static func bytesEqual(_ a: String, _ b: String) -> Bool {
            let x = a.utf8
            let y = b.utf8
            guard x.count == y.count else { return false }
            let contiguous = x.withContiguousStorageIfAvailable { p in
                y.withContiguousStorageIfAvailable { q in p.elementsEqual(q) }
            }
            if let contiguous, let equal = contiguous { return equal }
            return x.elementsEqual(y)
        }
    }
}
