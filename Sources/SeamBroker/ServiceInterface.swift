import SeamContext
import SeamJSON
import SeamProtocol
import SeamSystem

/// An interface an application adds to the broker beside `org.seam.Store`: its name, its varlink
/// description, and a handler for its methods (the timer app's `org.seam.Timers`).
///
/// Handlers run on the broker's one thread, one call at a time, so each method is atomic with
/// respect to every other call from every client: read, decide and save cannot interleave.
public struct ServiceInterface: Sendable {
    public typealias Handler = @Sendable (_ member: String, _ parameters: JSONObject, _ call: ServiceCall) -> Result<JSONObject, VarlinkError>

    public let name: String
    /// The varlink interface definition, as `GetInterfaceDescription` returns it.
    public let description: String
    /// The entities a method may write, by member (nil: any). A call waits while a store it may
    /// write holds its writes (`WriteGate`): one that says which goes on while the other
    /// store's writes wait (the ticker's alarms, which write Sessions alone, while a writer of
    /// timers waits for the Cloud store).
    let writes: @Sendable (_ member: String) -> Set<String>?
    /// Runs a method: the broker calls it on its thread; a test may, with `ServiceCall.direct`.
    public let handler: Handler

    public init(name: String, description: String, writes: @escaping @Sendable (_ member: String) -> Set<String>? = { _ in nil },
                handler: @escaping Handler) {
        self.name = name
        self.description = description
        self.writes = writes
        self.handler = handler
    }
}

/// What a service method may use: the context for reads, saves through the broker (which
/// records the connection's author and tells subscribers), and the broker's clock.
public struct ServiceCall {
    public let context: Context
    /// The author of this connection's saves, or nil for a read-only connection (no Hello).
    public let author: String?
    /// Where "now" comes from: the broker's loop's clock (the system's in service).
    public let clock: any Clock
    /// Whether the connection may make this save (its capabilities); an error if not.
    let check: (SaveRequest) -> VarlinkError?
    let saver: (SaveRequest, String) throws(ContextError) -> ChangeSet?

    init(context: Context, author: String?, clock: any Clock, check: @escaping (SaveRequest) -> VarlinkError?,
         saver: @escaping (SaveRequest, String) throws(ContextError) -> ChangeSet?) {
        self.context = context
        self.author = author
        self.clock = clock
        self.check = check
        self.saver = saver
    }

    /// A call that saves straight into `context` as `author`, with nothing to refuse, at the
    /// time `clock` gives: for running a service's methods without a broker (its tests, on a
    /// `ManualClock`).
    public static func direct(_ context: Context, author: String = "cli", clock: any Clock) -> ServiceCall {
        ServiceCall(context: context, author: author, clock: clock, check: { _ in nil }) { request, author throws(ContextError) in
            try context.save(request, author: author, time: clock.now)
        }
    }

    /// Unix seconds now.
    public var now: Double { clock.now }

    /// Saves as one transaction; subscribers hear of it. Refused on a read-only connection.
    public func save(_ request: SaveRequest) throws(VarlinkError) -> ChangeSet? {
        guard let author else {
            throw .permissionDenied("this connection is read-only: call org.seam.Store.Hello before saving")
        }
        if let denied = check(request) { throw denied }
        do { return try saver(request, author) } catch { throw VarlinkError(error) }
    }
}
