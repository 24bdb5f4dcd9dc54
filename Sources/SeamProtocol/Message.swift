import SeamJSON

/// A varlink call, with Seam's one extension: an `id` that every reply to it echoes.
public struct Call: Sendable {
    /// The fully qualified method; `interface` and `member` are its two parts, split once here
    /// (the broker looks at them on every call).
    public var method: String {
        didSet { (interface, member) = Self.split(method) }
    }
    /// The interface part of `method` (`org.seam.Store` of `org.seam.Store.Fetch`).
    public private(set) var interface: String
    /// The member part of `method` (`Fetch`).
    public private(set) var member: String
    public var parameters: JSONObject
    /// The caller accepts several replies (`continues: true` on all but the last).
    public var more: Bool
    /// The caller wants no reply at all.
    public var oneway: Bool
    /// Multiplexing: replies carry this id back. Absent for plain varlink clients.
    public var id: JSON?

    public init(method: String, parameters: JSONObject = [:], more: Bool = false, oneway: Bool = false, id: JSON? = nil) {
        self.method = method
        (interface, member) = Self.split(method)
        self.parameters = parameters
        self.more = more
        self.oneway = oneway
        self.id = id
    }

    /// `("org.seam.Store", "Fetch")` of `org.seam.Store.Fetch`; `("", name)` without a dot.
    static func split(_ method: String) -> (String, String) {
        let utf8 = method.utf8
        guard let dot = utf8.lastIndex(of: UInt8(ascii: ".")) else { return ("", method) }
        return (String(method[..<dot]), String(method[utf8.index(after: dot)...]))
    }

    /// Reads a call from a decoded frame; the error is the reply to send.
    public init(_ json: JSON) throws(VarlinkError) {
        guard case .object(let o) = json else { throw .invalidRequest("the message is not a JSON object") }
        guard let method = o["method"]?.stringValue, !method.isEmpty else { throw .invalidParameter("method") }
        self.method = method
        (interface, member) = Self.split(method)
        switch o["parameters"] {
        case nil, .null?: parameters = [:]
        case .object(let p)?: parameters = p
        default: throw .invalidParameter("parameters")
        }
        func flag(_ key: String) throws(VarlinkError) -> Bool {
            switch o[key] {
            case nil, .null?: return false
            case .bool(let b)?: return b
            default: throw .invalidParameter(key)
            }
        }
        more = try flag("more")
        oneway = try flag("oneway")
        switch o["id"] {
        case nil, .null?: id = nil
        case .string?, .integer?: id = o["id"]
        default: throw .invalidParameter("id")
        }
    }

    public var json: JSON {
        var o: JSONObject = ["method": .string(method)]
        if !parameters.isEmpty { o["parameters"] = .object(parameters) }
        if more { o["more"] = .bool(true) }
        if oneway { o["oneway"] = .bool(true) }
        if let id { o["id"] = id }
        return .object(o)
    }

    /// The call as a frame: JSON and its NUL.
    public func frame() -> [UInt8] {
        var out = json.encoded()
        out.append(0)
        return out
    }
}

/// A varlink reply: parameters, or an error; `continues` when more replies follow.
public struct Reply: Sendable {
    public var parameters: JSONObject
    public var error: String?
    public var continues: Bool
    public var id: JSON?

    public init(parameters: JSONObject = [:], error: String? = nil, continues: Bool = false, id: JSON? = nil) {
        self.parameters = parameters
        self.error = error
        self.continues = continues
        self.id = id
    }

    public init(_ error: VarlinkError, id: JSON?) {
        self.init(parameters: error.parameters, error: error.name, continues: false, id: id)
    }

    public init(_ json: JSON) throws(VarlinkError) {
        guard case .object(let o) = json else { throw .invalidParameter("the reply is not a JSON object") }
        parameters = o["parameters"]?.objectValue ?? [:]
        error = o["error"]?.stringValue
        continues = o["continues"]?.boolValue ?? false
        id = o["id"]
    }

    public var json: JSON {
        var o: JSONObject = ["parameters": .object(parameters)]
        if let error { o["error"] = .string(error) }
        if continues { o["continues"] = .bool(true) }
        if let id { o["id"] = id }
        return .object(o)
    }

    /// The reply as a frame: JSON and its NUL.
    public func frame() -> [UInt8] {
        var out = json.encoded()
        out.append(0)
        return out
    }
}

extension Reply {
    /// A successful reply written straight to its frame, without building its parameters as a
    /// `JSON` value: `body` writes the members of the parameters object. The bytes are the ones
    /// `Reply(parameters:continues:id:).frame()` would give for the same parameters.
    public static func frame(id: JSON?, continues: Bool = false, capacity: Int = 512,
                             parameters body: (inout JSONStreamWriter) -> Void) -> [UInt8] {
        var w = JSONStreamWriter(capacity: capacity)
        w.beginObject()
        w.key("parameters")
        w.beginObject()
        body(&w)
        w.endObject()
        if continues {
            w.key("continues")
            w.bool(true)
        }
        if let id {
            w.key("id")
            w.value(id)
        }
        w.endObject()
        w.appendTerminator(0)
        return w.finish()
    }
}

extension Reply {
    /// The error a reply frame (as `frame()` writes one: `{"parameters":{…},"error":"NAME",…}`)
    /// carries, or nil for a successful one: its parameters are skipped as a JSON value, without
    /// decoding them. A frame of another shape (or past 64 KiB: errors are short) reads as no error.
    public static func errorName(inFrame frame: [UInt8]) -> String? {
        guard frame.count > 16, frame.count <= 65_536 else { return nil }
        let prefix = Array(#"{"parameters":"#.utf8)
        guard frame.starts(with: prefix) else { return nil }
        var i = prefix.count
        var depth = 0
        var inString = false
        // Past the parameters object: strings skipped with their escapes, braces and brackets counted.
        while i < frame.count {
            let b = frame[i]
            if inString {
                if b == UInt8(ascii: "\\") { i += 1 } else if b == UInt8(ascii: "\"") { inString = false }
            } else {
                switch b {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                default: break
                }
                if depth == 0 {
                    i += 1
                    break
                }
            }
            i += 1
        }
        let key = Array(#","error":""#.utf8)
        guard frame.count - i > key.count, frame[i..<i + key.count].elementsEqual(key) else { return nil }
        var scanner = FrameScanner(bytes: frame[(i + key.count - 1)...])
        return scanner.plainString()
    }
}
