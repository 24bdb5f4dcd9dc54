import SeamContext
import SeamJSON
import SeamProtocol
import SeamSchema

/// The context as the wire meets it: a call's entity and fetch request read against the stores
/// as they serve now, and a reader's failure as the error its caller gets.
extension Context {
    /// The served entity a call's `entity` parameter names.
    func servedEntity(_ p: JSONObject) -> Result<Entity, VarlinkError> {
        guard let name = p["entity"]?.stringValue else { return .failure(.invalidParameter("entity")) }
        do { return .success(try servedEntity(name)) } catch {
            return .failure(VarlinkError(error))
        }
    }

    /// A fetch request from a call's parameters, for the entity as its store serves it
    /// (`WireRequests.fetch`).
    func fetchRequest(_ p: JSONObject, defaultLimit: Int? = Limits.maxFetchRows, offset: Bool = true) -> Result<FetchRequest, VarlinkError> {
        servedEntity(p).flatMap { WireRequests.fetch(p, entity: $0, schema: schema, defaultLimit: defaultLimit, offset: offset) }
    }

    /// A reader's failure as the error its caller gets. Damage SQLite found closes the store
    /// (as when the loop's own connection finds it).
    func readError(_ failure: ReaderPool.ReadFailure) -> VarlinkError {
        switch failure {
        case .budgetPassed(let seconds):
            return .queryTooExpensive("the query ran past its budget of \(seconds) s and was stopped; narrow the predicate "
                                      + "(an indexed equality, a prefix rather than a pattern), or add a limit", limit: "querySeconds")
        case .storeClosed(let store):
            let why = closedStores[store].map { "it is closed: \($0)" } ?? "it was opened again while the read waited; try again"
            return .storeUnavailable(store: store, "the \(store) store closed under the read (\(why))")
        case .fileReplaced(let store):
            return .storeUnavailable(store: store, "the \(store) store's file was removed or replaced a moment ago and seamd is "
                                     + "putting its data back; try again in a second")
        case .damaged(let store, let e):
            return VarlinkError(reportDamage(e, store: store))
        case .database(let e):
            return .storeFailure("\(e)")
        }
    }
}
