import SeamJSON
import SeamProtocol
import SeamSystem

/// Why a call to seamd failed.
public struct ClientError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// No broker answers where we looked.
        case cannotConnect(path: String, SystemError)
        /// The broker answered with a varlink error.
        case remote(VarlinkError)
        /// The connection broke (the broker stopped or died).
        case disconnected
        /// The broker sent something that is not a reply.
        case malformed(String)
        /// No reply within `SeamConnection.replyTimeout` seconds (a broker stopped or stuck).
        case timedOut(Double)
    }

    public var kind: Kind
    public init(_ kind: Kind) { self.kind = kind }

    /// The varlink error name, for a remote error.
    public var remoteName: String? { if case .remote(let e) = kind { return e.name } else { return nil } }

    /// The error as a person reads it: a remote error's message without its varlink name
    /// (`description` keeps the name, for scripts and `--verbose`).
    public var personMessage: String {
        guard case .remote(let e) = kind else { return description }
        if let message = e.parameters["message"]?.stringValue, !message.isEmpty { return message }
        let short = e.name.split(separator: ".").last.map(String.init) ?? e.name
        switch e.name {
        case "org.varlink.service.InvalidParameter":
            return "seamd refused the value given for \(e.parameters["parameter"]?.stringValue ?? "a parameter")"
        case "org.varlink.service.MethodNotFound", "org.varlink.service.InterfaceNotFound":
            return "this seamd does not know \(e.parameters["method"]?.stringValue ?? e.parameters["interface"]?.stringValue ?? "that call") "
                + "(an older seamd? seam status shows its version)"
        default:
            // A name of words run together ("ShuttingDown") read as words ("shutting down").
            var words = ""
            for c in short {
                if c.isUppercase, !words.isEmpty { words.append(" ") }
                words.append(Character(c.lowercased()))
            }
            return "seamd said: \(words)"
        }
    }

    public var description: String {
        switch kind {
        case .cannotConnect(let path, let e):
            return "no seamd answers on \(path) (\(e.message)); start it with `seam up` (or `seamd` in the foreground; from a checkout: scripts/run)"
        case .remote(let e): return e.description
        case .disconnected: return "the connection to seamd broke (did it stop?)"
        case .malformed(let why): return "seamd sent a malformed reply: \(why)"
        case .timedOut(let seconds): return "seamd did not answer within \(seconds) s (is it stopped or stuck?)"
        }
    }
}

/// A connection to seamd: blocking calls, one at a time, with typed errors and reconnection.
///
/// Where it connects: a socket inherited on the descriptor `$SEAM_FD` (what seamd hands the
/// processes it starts; the first client of a process takes it), else `$SEAM_SOCKET`, else the
/// default path.
public final class SeamConnection {
    public let path: String
    private var fd: Int32
    private var decoder = FrameDecoder(maxFrameBytes: Limits.maxReplyFrameBytes)
    private var nextID: Int64 = 0
    private var helloParameters: JSONObject?
    private let inherited: Bool

    /// Replies that arrived for other calls (a `more` call's later replies) while a call waited.
    private var unsolicited: [Reply] = []
    /// The ids of calls sent on this connection whose last reply has not come yet.
    private var inFlight = Set<Int64>()
    /// Those of an earlier connection, lost with it: `finish` and `pending` say so.
    private var lost = Set<Int64>()
    private var lostUnreported = false
    /// Calls whose last reply came while another call waited and was not kept (more than
    /// `maxUnsolicited` were waiting): `finish` says so rather than wait for ever.
    private var dropped = Set<Int64>()
    private static let maxUnsolicited = 10_000

    /// Connects as `design.md` says: `SEAM_FD`, then `SEAM_SOCKET`, then the default path.
    public static func connect(path: String? = nil) throws(ClientError) -> SeamConnection {
        if path == nil, let fd = InheritedSocket.take() {
            return SeamConnection(fd: fd, path: "fd \(fd)", inherited: true)
        }
        let target = path ?? Environment.socketPath
        do { return SeamConnection(fd: try openSocket(target), path: target, inherited: false) } catch {
            throw ClientError(.cannotConnect(path: target, error))
        }
    }

    /// A connection to `path` whose reads never block: they wait in poll, so that
    /// `replyTimeout` holds and `pending()` returns at once.
    private static func openSocket(_ path: String) throws(SystemError) -> Int32 {
        let fd = try UnixSocket.connect(path: path)
        UnixSocket.setNonBlocking(fd, true)
        return fd
    }

    private init(fd: Int32, path: String, inherited: Bool) {
        self.fd = fd
        self.path = path
        self.inherited = inherited
    }

    /// A connection over a socket already connected to seamd (one end of a pair it serves),
    /// which it then owns. `wait(fd, milliseconds)` is what it does while a reply has not come,
    /// instead of sleeping in poll: a broker in the same thread turns its loop there. It does
    /// not reconnect.
    public init(adopting fd: Int32, name: String, wait: @escaping (Int32, Int32) -> Void) {
        UnixSocket.setNonBlocking(fd, true)
        self.fd = fd
        path = name
        inherited = true
        adoptedWait = wait
    }

    /// What an adopted connection does while it waits (`init(adopting:name:wait:)`).
    private var adoptedWait: ((Int32, Int32) -> Void)?

    deinit { if fd >= 0 { Descriptors.close(fd) } }

    /// Says hello: protocol version, role, name. Without it the connection is read-only.
    @discardableResult
    public func hello(role: String = "cli", name: String? = nil) throws(ClientError) -> JSONObject {
        var p: JSONObject = ["version": .integer(1), "role": .string(role)]
        if let name { p["name"] = .string(name) }
        let reply = try call("org.seam.Store.Hello", p)
        helloParameters = p
        return reply
    }

    /// Calls `method` and returns its reply's parameters; a varlink error is thrown.
    /// Reads (`readMethods`) are retried once on a fresh connection if the old one broke; a call
    /// that may change something is not, since it may have been done before the break.
    @discardableResult
    public func call(_ method: String, _ parameters: JSONObject = [:]) throws(ClientError) -> JSONObject {
        // Calls begun or started and not yet answered are lost with a broken connection: their
        // callers must hear so, not wait on a new connection for replies that never come.
        let othersInFlight = !inFlight.isEmpty
        do {
            return try roundTrip(method, parameters)
        } catch let e where Self.isRetryable(method, e) && !othersInFlight {
            // What is in flight now is this call alone, sent again: nothing else was lost.
            try reconnect(abandoning: inFlight)
            return try roundTrip(method, parameters)
        }
    }

    private static func isRetryable(_ method: String, _ e: ClientError) -> Bool {
        guard case .disconnected = e.kind else { return false }
        return readMethods.contains(method)
    }

    /// The methods that change nothing, and so may be sent again after a broken connection.
    public static let readMethods: Set<String> = [
        "org.seam.Store.Hello", "org.seam.Store.Schema", "org.seam.Store.Fetch", "org.seam.Store.Count",
        "org.seam.Store.Status", "org.seam.Sync.Status", "org.seam.Sync.History", "org.seam.Sync.Served",
        "org.seam.Migration.Plan", "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
    ]

    /// Opens a new connection to the same path and says hello again if we had.
    public func reconnect() throws(ClientError) { try reconnect(abandoning: []) }

    /// `reconnect()`, without reporting the calls `abandoned` as lost (their caller knows).
    private func reconnect(abandoning abandoned: Set<Int64>) throws(ClientError) {
        guard !inherited else { throw ClientError(.disconnected) }
        // Forgotten at once: should the connect fail, no later call may use the number, which
        // the process may by then have given to another file.
        if fd >= 0 { Descriptors.close(fd) }
        fd = -1
        do { fd = try Self.openSocket(path) } catch { throw ClientError(.cannotConnect(path: path, error)) }
        decoder = FrameDecoder(maxFrameBytes: Limits.maxReplyFrameBytes)
        let lostNow = inFlight.subtracting(abandoned)
        lost.formUnion(lostNow)
        lostUnreported = lostUnreported || !lostNow.isEmpty
        inFlight = []
        if let p = helloParameters { _ = try roundTrip("org.seam.Store.Hello", p) }
    }

    /// Calls `method` with `more` and hands each reply's parameters to `each`, until the last
    /// (the one without `continues`); a varlink error ends it by being thrown.
    public func stream(_ method: String, _ parameters: JSONObject = [:], each: (JSONObject) throws -> Void) throws {
        let id = try send(method, parameters, more: true)
        while true {
            guard let reply = try readReply(waiting: true) else { continue }
            if let rid = reply.id, rid != id { continue }
            if let error = reply.error { throw ClientError(.remote(VarlinkError(error, reply.parameters))) }
            try each(reply.parameters)
            if !reply.continues { return }
        }
    }

    private func roundTrip(_ method: String, _ parameters: JSONObject) throws(ClientError) -> JSONObject {
        try finish(try begin(method, parameters))
    }

    /// Sends a call without waiting for its reply, so that work can overlap with the broker's;
    /// `finish` waits for the reply. Calls made meanwhile are answered as usual.
    public func begin(_ method: String, _ parameters: JSONObject = [:]) throws(ClientError) -> JSON {
        try send(method, parameters, more: false)
    }

    /// The reply to the call `id` sent with `begin` (a varlink error is thrown).
    @discardableResult
    public func finish(_ id: JSON) throws(ClientError) -> JSONObject {
        func answer(_ reply: Reply) throws(ClientError) -> JSONObject {
            if let error = reply.error { throw ClientError(.remote(VarlinkError(error, reply.parameters))) }
            return reply.parameters
        }
        if let i = unsolicited.firstIndex(where: { $0.id == id }) { return try answer(unsolicited.remove(at: i)) }
        if case .integer(let n) = id, lost.remove(n) != nil { throw ClientError(.disconnected) }
        if case .integer(let n) = id, dropped.remove(n) != nil {
            throw ClientError(.malformed("the reply to call \(n) was dropped: \(Self.maxUnsolicited) replies to other calls waited unread"))
        }
        // One deadline for the whole wait: replies to other calls do not move it.
        let deadline = replyTimeout.map { WallClock.monotonic() + $0 }
        while true {
            guard let reply = try readReply(waiting: true, deadline: deadline) else { continue }
            if let rid = reply.id, rid != id {
                if unsolicited.count < Self.maxUnsolicited {
                    unsolicited.append(reply)
                } else if case .integer(let n) = rid, !reply.continues {
                    dropped.insert(n)
                }
                continue
            }
            return try answer(reply)
        }
    }

    /// A call encoded ahead of its sending (`prepare`), with the id it will have.
    public struct PreparedCall: Sendable {
        public let id: Int64
        let frame: [UInt8]
    }

    /// Encodes a call to send later with `begin(_:)` (or never): a caller that waits for one
    /// reply encodes its next call meanwhile. Its id is taken now.
    public func prepare(_ method: String, _ parameters: JSONObject = [:]) -> PreparedCall {
        nextID += 1
        return PreparedCall(id: nextID, frame: Call(method: method, parameters: parameters, id: .integer(nextID)).frame())
    }

    /// Sends a call `prepare` encoded, without waiting for its reply (as `begin` does).
    public func begin(_ call: PreparedCall) throws(ClientError) -> JSON {
        try write(call.frame, id: call.id)
        return .integer(call.id)
    }

    private func send(_ method: String, _ parameters: JSONObject, more: Bool) throws(ClientError) -> JSON {
        nextID += 1
        let id = JSON.integer(nextID)
        try write(Call(method: method, parameters: parameters, more: more, id: id).frame(), id: nextID)
        return id
    }

    private func write(_ frame: [UInt8], id: Int64) throws(ClientError) {
        do {
            if let turn = adoptedWait {
                var offset = 0
                while offset < frame.count {
                    let n = try UnixSocket.write(fd, frame, from: offset)
                    // No room: the broker in this thread must read first.
                    if n == 0 { turn(fd, 1) }
                    offset += n
                }
            } else {
                try UnixSocket.writeAll(fd, frame)
            }
        } catch {
            throw ClientError(.disconnected)
        }
        inFlight.insert(id)
    }

    /// The descriptor to wait on (readable: `pending()` has replies).
    public var descriptor: Int32 { fd }

    /// Starts a call with `more` and returns its id; its replies come through `pending()`.
    public func start(_ method: String, _ parameters: JSONObject = [:]) throws(ClientError) -> JSON {
        try send(method, parameters, more: true)
    }

    /// The replies to calls started with `start` that have arrived, without waiting.
    /// Throws `disconnected` once when calls started before a reconnect were lost with it.
    public func pending() throws(ClientError) -> [Reply] {
        if lostUnreported {
            lostUnreported = false
            throw ClientError(.disconnected)
        }
        var out = unsolicited
        unsolicited = []
        while let reply = try readReply(waiting: false) { out.append(reply) }
        return out
    }

    /// How long a call waits for its reply before `ClientError.Kind.timedOut`; nil (the
    /// default): as long as it takes.
    public var replyTimeout: Double?

    /// The next reply; when `waiting` is false, nil as soon as the socket has nothing more.
    /// Waiting, it gives up at `deadline` (monotonic seconds; by default `replyTimeout` from now).
    private func readReply(waiting: Bool, deadline: Double?? = nil) throws(ClientError) -> Reply? {
        var buffer: [UInt8] = []
        let deadline = deadline ?? replyTimeout.map { WallClock.monotonic() + $0 }
        while true {
            do {
                if let frame = try decoder.next() {
                    let json: JSON
                    do { json = try JSON.decode(frame, limits: Limits.replyJSON) } catch { throw ClientError(.malformed("\(error)")) }
                    let reply: Reply
                    do { reply = try Reply(json) } catch { throw ClientError(.malformed("\(error)")) }
                    if case .integer(let n)? = reply.id, !reply.continues { inFlight.remove(n) }
                    return reply
                }
            } catch let e as ClientError {
                throw e
            } catch {
                throw ClientError(.malformed("\(error)"))
            }
            buffer.removeAll(keepingCapacity: true)
            let result: UnixSocket.ReadResult
            do { result = try UnixSocket.read(fd, into: &buffer) } catch { throw ClientError(.disconnected) }
            switch result {
            case .closed: throw ClientError(.disconnected)
            case .wouldBlock:
                guard waiting else { return nil }
                var wait: Int32 = 1000
                if let deadline {
                    let left = deadline - WallClock.monotonic()
                    if left <= 0 { throw ClientError(.timedOut(replyTimeout ?? 0)) }
                    wait = Int32(min(1000, (left * 1000).rounded(.up)))
                }
                if let turn = adoptedWait { turn(fd, wait) } else { _ = UnixSocket.waitReadable(fd, timeoutMilliseconds: wait) }
            case .bytes: decoder.append(buffer)
            }
        }
    }
}

// MARK: - Typed calls

extension SeamConnection {
    /// `org.seam.Store.Fetch`: the rows of `entity` matching `predicate` (with `$name` parameters).
    public func fetch(
        _ entity: String, where predicate: String? = nil, parameters: JSONObject = [:], sort: String? = nil,
        limit: Int? = nil, offset: Int? = nil, fields: [String]? = nil
    ) throws(ClientError) -> [JSONObject] {
        try rows(call("org.seam.Store.Fetch", Self.fetchParameters(entity, predicate, parameters, sort, limit, offset, fields)))
    }

    /// `fetch` without waiting: its id, for `finishFetch`. Calls made meanwhile are answered as
    /// usual (a worker reads the next page while it sends the last one on).
    public func beginFetch(
        _ entity: String, where predicate: String? = nil, parameters: JSONObject = [:], sort: String? = nil,
        limit: Int? = nil, offset: Int? = nil, fields: [String]? = nil
    ) throws(ClientError) -> JSON {
        try begin("org.seam.Store.Fetch", Self.fetchParameters(entity, predicate, parameters, sort, limit, offset, fields))
    }

    /// The rows of a fetch begun with `beginFetch`.
    public func finishFetch(_ id: JSON) throws(ClientError) -> [JSONObject] { try rows(finish(id)) }

    private static func fetchParameters(_ entity: String, _ predicate: String?, _ parameters: JSONObject, _ sort: String?,
                                        _ limit: Int?, _ offset: Int?, _ fields: [String]?) -> JSONObject {
        var p: JSONObject = ["entity": .string(entity)]
        if let predicate { p["predicate"] = .string(predicate) }
        if !parameters.isEmpty { p["parameters"] = .object(parameters) }
        if let sort { p["sort"] = .string(sort) }
        if let limit { p["limit"] = .integer(Int64(limit)) }
        if let offset { p["offset"] = .integer(Int64(offset)) }
        if let fields { p["fields"] = .array(fields.map(JSON.string)) }
        return p
    }

    /// `org.seam.Store.Fetch` by uuid: the row, or nil.
    public func row(_ entity: String, uuid: String) throws(ClientError) -> JSONObject? {
        try rows(call("org.seam.Store.Fetch", ["entity": .string(entity), "uuid": .string(uuid)])).first
    }

    /// `org.seam.Store.Count`.
    public func count(_ entity: String, where predicate: String? = nil, parameters: JSONObject = [:]) throws(ClientError) -> Int {
        var p: JSONObject = ["entity": .string(entity)]
        if let predicate { p["predicate"] = .string(predicate) }
        if !parameters.isEmpty { p["parameters"] = .object(parameters) }
        guard let n = try call("org.seam.Store.Count", p)["count"]?.int64Value else { throw ClientError(.malformed("no count")) }
        return Int(n)
    }

    /// One change of a save.
    public enum Change: Sendable {
        case insert(entity: String, values: JSONObject)
        case update(entity: String, uuid: String, values: JSONObject)
        case delete(entity: String, uuid: String)
    }

    /// `org.seam.Store.Save`: every change in one transaction. Returns the save's sequence number
    /// (nil when nothing changed) and the uuids of inserted rows, in order.
    @discardableResult
    public func save(_ changes: [Change]) throws(ClientError) -> (sequence: Int64?, inserted: [String]) {
        var inserts: [JSON] = [], updates: [JSON] = [], deletes: [JSON] = []
        for c in changes {
            switch c {
            case .insert(let e, let v): inserts.append(["entity": .string(e), "values": .object(v)])
            case .update(let e, let u, let v): updates.append(["entity": .string(e), "uuid": .string(u), "values": .object(v)])
            case .delete(let e, let u): deletes.append(["entity": .string(e), "uuid": .string(u)])
            }
        }
        var p = JSONObject()
        if !inserts.isEmpty { p["inserts"] = .array(inserts) }
        if !updates.isEmpty { p["updates"] = .array(updates) }
        if !deletes.isEmpty { p["deletes"] = .array(deletes) }
        let reply = try call("org.seam.Store.Save", p)
        let inserted = (reply["changes"]?.arrayValue ?? []).filter { $0["kind"]?.stringValue == "insert" }
            .compactMap { $0["uuid"]?.stringValue }
        return (reply["sequence"]?.int64Value, inserted)
    }

    /// `org.seam.Store.Status`.
    public func status() throws(ClientError) -> JSONObject { try call("org.seam.Store.Status") }

    private func rows(_ reply: JSONObject) throws(ClientError) -> [JSONObject] {
        guard let rows = reply["rows"]?.arrayValue else { throw ClientError(.malformed("no rows")) }
        return rows.compactMap(\.objectValue)
    }
}
