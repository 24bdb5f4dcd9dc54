import SeamClient
import SeamCommandLine
import SeamJSON
import SeamMetrics
import SeamProtocol

/// Commands about the broker and its stores, for people and scripts.
enum StoreCommands {
    /// The methods a person may call with `seam call` (as `seam call` completes them).
    static let methods = [
        "org.seam.Store.Hello", "org.seam.Store.Schema", "org.seam.Store.Fetch", "org.seam.Store.Count", "org.seam.Store.Save",
        "org.seam.Store.Status", "org.seam.Store.Subscribe", "org.seam.Store.Unsubscribe", "org.seam.Timers.Start",
        "org.seam.Timers.Flash", "org.seam.Timers.Pause", "org.seam.Timers.Resume", "org.seam.Timers.Reset", "org.seam.Timers.Skip",
        "org.seam.Timers.Stop", "org.seam.Timers.Clear", "org.seam.Timers.Advance", "org.seam.Timers.AdvanceMany",
        "org.seam.Sync.Status", "org.seam.Sync.Now", "org.seam.Sync.Reload", "org.seam.Migration.Plan", "org.seam.Migration.Migrate",
        "org.seam.Maintenance.Backup", "org.seam.Metrics.Get", "org.seam.Maintenance.Check", "org.seam.Maintenance.Restore", "org.varlink.service.GetInfo",
        "org.varlink.service.GetInterfaceDescription",
    ]

    static let all: [Command] = [
        Command("status", "the broker: version, pid, connections, subscriptions, stores, roles", options: [Opt.json]) { _, args in
            let s = try connect(args, hello: false).status()
            if args.flag("json") { return output(.object(s)) }
            print("\(s["product"]?.stringValue ?? "?") \(s["version"]?.stringValue ?? "") pid \(s["pid"]?.int64Value ?? 0), "
                  + "\(s["connections"]?.int64Value ?? 0) connection(s), \(s["subscriptions"]?.int64Value ?? 0) subscription(s) "
                  + "on \(s["channels"]?.int64Value ?? 0) channel(s), sequence \(s["sequence"]?.int64Value ?? 0)")
            for store in s["stores"]?.arrayValue ?? [] {
                print("  " + describe(store: store))
                // Why a store is closed, and what to do about it.
                if let reason = store["reason"]?.stringValue { print("    \(reason)") }
                if let note = store["note"]?.stringValue { print("    \(note)") }
            }
            // A big save written in steps holds its store's writes until it ends.
            if let steps = s["saveInSteps"]?.objectValue, let of = steps["of"]?.int64Value, of > 0 {
                let done = steps["done"]?.int64Value ?? 0
                print("  saving in steps: \(steps["operations"]?.int64Value ?? 0) operations into \(steps["store"]?.stringValue ?? "?") "
                      + "(connection \(steps["connection"]?.int64Value ?? 0)), \(done * 100 / of)% done; writes into that store wait for it")
            }
            if let last = s["migration"]?["last"], let error = last["error"]?.stringValue {
                print("  the last migration failed: \(error); `seam migrate` tries again")
            }
            if let r = s["readers"] {
                func lane(_ l: JSON?) -> String {
                    "\(l?["threads"]?.int64Value ?? 0) threads, \(l?["running"]?.int64Value ?? 0) running, \(l?["waiting"]?.int64Value ?? 0) waiting"
                }
                print("readers: \(lane(r["light"])); heavy lane \(lane(r["heavy"]))")
            }
            let roles = s["roles"]?.arrayValue ?? []
            if !roles.isEmpty {
                print("roles:")
                table([["  NAME", "STATE", "PID", "RESTARTS", "LAST ERROR"]] + roles.map { r in
                    var state = r["state"]?.stringValue ?? "?"
                    if let d = r["restartIn"]?.doubleValue { state += " (restart in \(Int(d.rounded(.up))) s)" }
                    return ["  " + (r["name"]?.stringValue ?? "?"), state, r["pid"]?.int64Value.map { String($0) } ?? "-",
                            String(r["restarts"]?.int64Value ?? 0), r["lastError"]?.stringValue ?? ""]
                })
            }
            let plugins = s["plugins"]?.arrayValue ?? []
            if !plugins.isEmpty {
                func list(_ j: JSON?) -> String {
                    guard let items = j?.arrayValue else { return "every entity" }
                    return items.isEmpty ? "nothing" : items.compactMap(\.stringValue).joined(separator: ",")
                }
                print("plugins:")
                table([["  NAME", "PID", "READS", "WRITES", "SUPERVISED"]] + plugins.map { p in
                    ["  " + (p["name"]?.stringValue ?? "?"), String(p["pid"]?.int64Value ?? 0), list(p["reads"]), list(p["writes"]),
                     p["supervised"]?.boolValue == true ? "yes" : "no"]
                })
            }
            for problem in s["configurationProblems"]?.arrayValue ?? [] { print("configuration: \(problem.stringValue ?? "")") }
        },
        Command("metrics", "seamd's counters, gauges and histograms, in Prometheus's text format", options: [Opt.json]) { _, args in
            let reply = try connect(args).call("org.seam.Metrics.Get")
            if args.flag("json") { return output(.object(reply)) }
            let families: [MetricFamily]
            do { families = try MetricsWire.families(reply) } catch {
                throw CLIError("seamd's metrics do not read as PROTOCOL.md says (\(error)); is seam older than seamd?")
            }
            print(PrometheusText.render(families), terminator: "")
        },
        Command("schema", "models, versions, hashes, entities", options: [Opt.json]) { _, args in
            let s = try connect(args, hello: false).call("org.seam.Store.Schema")
            if args.flag("json") { return output(.object(s)) }
            for m in s["models"]?.arrayValue ?? [] {
                print("\(m["name"]?.stringValue ?? "?") v\(m["version"]?.int64Value ?? 0)  \(m["hash"]?.stringValue ?? "")")
                for e in m["entities"]?.arrayValue ?? [] {
                    let attrs = (e["attributes"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
                    print("  \(e["name"]?.stringValue ?? "?") (\(e["configuration"]?.stringValue ?? "?")): \(attrs.joined(separator: ", "))")
                }
            }
        },
        Command("store info", "the store files: paths, sizes, state, the model versions they hold, backups",
                options: [Opt.json]) { _, args in
            let status = try connect(args, hello: false).status()
            if args.flag("json") {
                return output(["stores": status["stores"] ?? .array([]), "migration": status["migration"] ?? .null,
                               "backups": status["backups"] ?? .array([])])
            }
            for store in status["stores"]?.arrayValue ?? [] {
                print(describe(store: store))
                for v in store["versions"]?.arrayValue ?? [] {
                    let version = v["version"]?.int64Value ?? 0, current = v["current"]?.int64Value ?? 0
                    // One shape may be several versions' (a release that changed only the other store).
                    let oldest = min(v["oldest"]?.int64Value ?? version, version)
                    let label = oldest < version ? "v\(oldest)–v\(version)" : "v\(version)"
                    print("  \(v["model"]?.stringValue ?? "?") \(label)" + (version == current ? " (current)" : " (this build: v\(current))")
                          + (oldest < version ? ": one shape, which these versions share" : ""))
                }
                if let reason = store["reason"]?.stringValue { print("  \(reason)") }
                print("  backup: " + (store["backup"]?.stringValue ?? "none"))
            }
            print("sequence \(status["sequence"]?.int64Value ?? 0)")
            let backups = status["backups"]?.arrayValue ?? []
            print(backups.isEmpty ? "backups: none" : "backups (oldest first):")
            for b in backups { print("  " + describe(backup: b)) }
        },
        Command("migrate", "bring outdated stores to this build's versions through seamd's worker, with progress",
                options: [.flag("dry-run", "show the plan, each step in words and SQL, and change nothing"), Opt.json]) { _, args in
            try migrate(args)
        },
        Command("query", "rows of an entity, as JSON lines", operands: [Opt.entityArg],
                options: Opt.query + [.flag("json", "one JSON array, not JSON lines")]) { operands, args in
            var p: JSONObject = ["entity": .string(operands[0])]
            if let w = args.value("where") { p["predicate"] = .string(w) }
            if let s = args.value("sort") { p["sort"] = .string(s) }
            if let n = try args.integer("limit", in: 0...100_000) { p["limit"] = .integer(Int64(n)) }
            if let f = args.value("fields") { p["fields"] = .array(fieldList(f).map(JSON.string)) }
            let rows = try connect(args, hello: false).call("org.seam.Store.Fetch", p)["rows"]?.arrayValue ?? []
            if args.flag("json") { output(.array(rows)) } else { rows.forEach(output) }
        },
        Command("subscribe", "follow a live query: JSON lines, the result then each diff", operands: [Opt.entityArg],
                options: Opt.query + [.flag("json", "JSON lines (the default)"), .flag("pretty", "describe each change for reading")]) { operands, args in
            try await follow(operands[0], args)
        },
        Command("call", "any varlink method, e.g. seam call org.seam.Store.Count '{\"entity\":\"Timer\"}'",
                operands: [Operand("METHOD", "the method's full name", complete: .words(StoreCommands.methods)),
                           Operand("PARAMETERS-JSON", "its parameters, a JSON object (default {})", optional: true)]) { operands, args in
            var parameters = JSONObject()
            if operands.count > 1 {
                let decoded: JSON
                do { decoded = try JSON.decode(operands[1]) } catch {
                    throw Arguments.UsageError("the parameters are not valid JSON: \(error)")
                }
                guard case .object(let o) = decoded else {
                    throw Arguments.UsageError("the parameters must be a JSON object, e.g. '{\"entity\":\"Timer\"}'")
                }
                parameters = o
            }
            output(.object(try connect(args).call(operands[0], parameters)))
        },
    ]

    /// One line for a generation of backups/ from `Status`: name, why and when, stores, versions, size.
    static func describe(backup b: JSON) -> String {
        let versions: [String] = (b["versions"]?.objectValue ?? [:]).map { m in "\(m.key) v\(m.value.int64Value ?? 0)" }.sorted()
        let stores: [String] = (b["stores"]?.arrayValue ?? []).compactMap(\.stringValue)
        let megabytes = Double(b["bytes"]?.int64Value ?? 0) / 1_048_576
        var line = (b["name"]?.stringValue ?? "?") + ": " + (b["reason"]?.stringValue ?? "?")
        line += " at " + (b["createdAt"]?.stringValue ?? "?") + ", " + stores.joined(separator: ", ")
        if !versions.isEmpty { line += " (" + versions.joined(separator: ", ") + ")" }
        return line + ", \(Double(Int(megabytes * 10)) / 10) MB"
    }

    /// One line for a store from `Status`: name, state, path and size.
    static func describe(store: JSON) -> String {
        var line = "\(store["name"]?.stringValue ?? "?"): \(store["state"]?.stringValue ?? "open")"
        if store["readOnly"]?.boolValue == true {
            line += ", read-only (\(store["readOnlyReason"]?.stringValue ?? "the file cannot be written"); saves to it are refused)"
        }
        line += ", \(store["path"]?.stringValue ?? "?") (\(store["size"]?.int64Value ?? 0) bytes)"
        if let e = store["checkpointError"]?.stringValue { line += "; the last WAL checkpoint failed: \(e)" }
        return line
    }

    static func migrate(_ args: Arguments) throws {
        let c = try connect(args)
        if args.flag("dry-run") {
            let plan = try c.call("org.seam.Migration.Plan")
            if args.flag("json") { return output(.object(plan)) }
            if plan["running"]?.boolValue == true { print("A migration is running now; its plan:") }
            print(plan["text"]?.stringValue ?? "", terminator: "")
            return
        }
        let progress = Progress()
        var final: JSONObject = [:]
        try c.stream("org.seam.Migration.Migrate") { reply in
            final = reply
            guard let p = reply["progress"], reply["state"]?.stringValue == "running" else { return }
            if args.flag("json") { return output(.object(reply)) }
            let (label, detail) = progressLine(p)
            progress.show(label, fraction: p["fraction"]?.doubleValue ?? 0, detail: detail,
                          phase: "\(p["store"]?.stringValue ?? "") \(p["phase"]?.stringValue ?? "")")
        }
        progress.end()
        if args.flag("json") { return output(.object(final)) }
        switch final["state"]?.stringValue {
        case "current"?: print("Nothing to migrate: every store is current.")
        default:
            let stores = final["stores"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let backups = final["backups"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let seconds = final["progress"]?["elapsed"]?.doubleValue ?? 0
            print("migrated \(stores.joined(separator: ", ")) in \(Double(Int(seconds * 10)) / 10) s; originals kept in "
                  + (backups.isEmpty ? "backups/" : backups.joined(separator: ", ")))
            let closed = final["closed"]?.arrayValue ?? []
            guard closed.isEmpty else {
                for c in closed { Terminal.error("seam: \(c["store"]?.stringValue ?? "?") is migrated but not open: \(c["reason"]?.stringValue ?? "")") }
                Terminal.fail("seam", "seamd tries again, up to every minute; `seam status` shows when the store serves")
            }
        }
    }

    /// A migration's progress as `Progress` shows it: "Local copying Session", and
    /// "120000/290000 rows, 3 s left" beside the bar.
    static func progressLine(_ p: JSON) -> (label: String, detail: String) {
        let label = "\(p["store"]?.stringValue ?? "") \(p["phase"]?.stringValue ?? "")" + (p["entity"]?.stringValue.map { " \($0)" } ?? "")
        var detail = ""
        if let total = p["rowsTotal"]?.int64Value, total > 0 {
            detail = "\(p["rowsDone"]?.int64Value ?? 0)/\(total) rows"
        } else if let total = p["bytesTotal"]?.int64Value, total > 0 {
            detail = "\((p["bytesWritten"]?.int64Value ?? 0) >> 20)/\(total >> 20) MiB"
        }
        if let left = p["estimate"]?.doubleValue { detail += (detail.isEmpty ? "" : ", ") + "\(Int(left.rounded(.up))) s left" }
        return (label, detail)
    }

    static func follow(_ entity: String, _ args: Arguments) async throws {
        let query = LiveQuery(entity, where: args.value("where"), sort: args.value("sort"), limit: try args.integer("limit", in: 0...100_000),
                              fields: args.value("fields").map(fieldList))
        let subscriber = try SeamSubscriber.connect(path: args.value("socket"))
        var live = LiveResult()
        for try await update in subscriber.subscribe(query) {
            try live.apply(update)
            defer { Terminal.flushOutput() }
            if !args.flag("pretty") {
                output(.object(update.json))
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
        }
    }
}

/// `--fields a,b` or `--fields "a, b"` (as `--sort` takes a list): the names, spaces trimmed.
func fieldList(_ text: String) -> [String] {
    text.split(separator: ",").map { $0.split(separator: " ").joined(separator: " ") }.filter { !$0.isEmpty }
}
