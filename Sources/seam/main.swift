// seam: the command-line client of seamd. (The full timer CLI grows here; today: the store verbs.)
import SeamClient
import SeamCommandLine
import SeamJSON
import SeamProtocol

let usage = """
    usage: seam COMMAND [OPTIONS]

    Talks to seamd over its socket ($SEAM_SOCKET, else $XDG_RUNTIME_DIR/seam/seamd.sock).

      seam status [--json]                       the broker: version, pid, connections, stores
      seam schema [--json]                       models, versions, hashes, entities
      seam query ENTITY [--where PRED] [--sort KEYS] [--limit N] [--json]
                                                 rows of an entity (JSON lines; --json: one array)
      seam subscribe ENTITY [--where PRED] [--sort KEYS] [--limit N] [--fields A,B] [--json]
                                                 follow a live query: its result, then what each
                                                 commit changes in it, until interrupted
                                                 (--json: every update as a JSON line)
      seam call METHOD [PARAMETERS-JSON]         any varlink method, e.g.
                                                 seam call org.seam.Store.Save '{"inserts":[…]}'
    Options: --socket PATH, --help. Errors go to stderr with a non-zero exit.
    """

func output(_ json: JSON) { print(String(decoding: json.encoded(), as: UTF8.self)) }

do {
    let args = try Arguments(Array(CommandLine.arguments.dropFirst()), options: ["socket", "where", "sort", "limit", "fields"], flags: ["json"])
    guard let command = args.positional.first, !args.wantsHelp else { print(usage); Terminal.exit(args.wantsHelp ? 0 : 64) }
    let connection = try SeamConnection.connect(path: args.value("socket"))
    switch command {
    case "status":
        let s = try connection.call("org.seam.Store.Status")
        if args.flag("json") { output(.object(s)); break }
        print("\(s["product"]?.stringValue ?? "?") \(s["version"]?.stringValue ?? "") pid \(s["pid"]?.int64Value ?? 0), "
              + "\(s["connections"]?.int64Value ?? 0) connection(s), \(s["subscriptions"]?.int64Value ?? 0) subscription(s) "
              + "on \(s["channels"]?.int64Value ?? 0) channel(s), sequence \(s["sequence"]?.int64Value ?? 0)")
        for store in s["stores"]?.arrayValue ?? [] {
            print("  \(store["name"]?.stringValue ?? "?"): \(store["path"]?.stringValue ?? "?") (\(store["size"]?.int64Value ?? 0) bytes)")
        }
    case "schema":
        let s = try connection.call("org.seam.Store.Schema")
        if args.flag("json") { output(.object(s)); break }
        for m in s["models"]?.arrayValue ?? [] {
            print("\(m["name"]?.stringValue ?? "?") v\(m["version"]?.int64Value ?? 0)  \(m["hash"]?.stringValue ?? "")")
            for e in m["entities"]?.arrayValue ?? [] {
                let attrs = (e["attributes"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
                print("  \(e["name"]?.stringValue ?? "?") (\(e["configuration"]?.stringValue ?? "?")): \(attrs.joined(separator: ", "))")
            }
        }
    case "query":
        guard args.positional.count == 2 else { throw Arguments.UsageError("seam query ENTITY [--where PRED] [--sort KEYS] [--limit N]") }
        var p: JSONObject = ["entity": .string(args.positional[1])]
        if let w = args.value("where") { p["predicate"] = .string(w) }
        if let s = args.value("sort") { p["sort"] = .string(s) }
        if let n = try args.integer("limit", in: 0...100_000) { p["limit"] = .integer(Int64(n)) }
        let rows = try connection.call("org.seam.Store.Fetch", p)["rows"]?.arrayValue ?? []
        if args.flag("json") { output(.array(rows)) } else { rows.forEach(output) }
    case "subscribe":
        guard args.positional.count == 2 else {
            throw Arguments.UsageError("seam subscribe ENTITY [--where PRED] [--sort KEYS] [--limit N] [--fields A,B]")
        }
        let query = LiveQuery(args.positional[1], where: args.value("where"), sort: args.value("sort"),
                              limit: try args.integer("limit", in: 0...100_000),
                              fields: args.value("fields").map { $0.split(separator: ",").map(String.init) })
        let subscriber = try SeamSubscriber.connect(path: args.value("socket"))
        var live = LiveResult()
        for try await update in subscriber.subscribe(query) {
            try live.apply(update)
            if args.flag("json") {
                output(.object(update.json))
                Terminal.flushOutput()
                continue
            }
            switch update.kind {
            case .result, .resync:
                let note = update.from.map { " (missed changes after \($0))" } ?? ""
                print("\(update.kind.rawValue) at sequence \(update.sequence)\(note): \(live.rows.count) row(s)")
                live.rows.forEach { print("  " + String(decoding: JSON.object($0).encoded(), as: UTF8.self)) }
            case .diff:
                print("diff at sequence \(update.sequence): \(update.inserted.count) inserted, \(update.deleted.count) deleted, "
                      + "\(update.updated.count) updated, \(update.moved.count) moved; \(live.rows.count) row(s)")
                for i in update.inserted { print("  + [\(i.index)] " + String(decoding: JSON.object(i.row).encoded(), as: UTF8.self)) }
                for d in update.deleted { print("  - [\(d.index)] \(d.uuid)") }
                for u in update.updated {
                    print("  ~ [\(u.index)] \(u.changedKeys.joined(separator: ", ")): " + String(decoding: JSON.object(u.row).encoded(), as: UTF8.self))
                }
                for m in update.moved { print("  ↕ \(m.uuid) \(m.from) → \(m.to)") }
            case .end:
                print("ended at sequence \(update.sequence)")
            }
            Terminal.flushOutput()
        }
    case "call":
        guard args.positional.count >= 2 else { throw Arguments.UsageError("seam call METHOD [PARAMETERS-JSON]") }
        var parameters = JSONObject()
        if args.positional.count > 2 {
            guard case .object(let o)? = try? JSON.decode(args.positional[2]) else {
                throw Arguments.UsageError("the parameters must be a JSON object, e.g. '{\"entity\":\"Timer\"}'")
            }
            parameters = o
        }
        try connection.hello()
        output(.object(try connection.call(args.positional[1], parameters)))
    default:
        throw Arguments.UsageError("unknown command '\(command)'\n\n" + usage)
    }
} catch let e as Arguments.UsageError {
    Terminal.fail("seam", e.message, status: Terminal.usageError)
} catch {
    Terminal.fail("seam", "\(error)")
}
