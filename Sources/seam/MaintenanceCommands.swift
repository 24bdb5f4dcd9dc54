import SeamClient
import SeamCommandLine
import SeamJSON
import SeamStore
import SeamSystem
import SeamTimers

/// `seam backup`, `seam check` and `seam restore`: through seamd when one answers (it serves
/// meanwhile), else on the data directory directly (its lock taken, so that no seamd starts).
enum MaintenanceCommands {
    static let all: [Command] = [
        Command("backup", "take every store, as one moment, into a new directory DIR (while seamd serves; or offline)",
                operands: [Operand("DIR", "a new or empty directory for the set", complete: .directory)],
                options: [Opt.dataDir, Opt.json]) { operands, args in
            try backup(absolute(operands[0]), args)
        },
        Command("check", "SQLite's full integrity check of every store, read-only, with progress; a damaged store is closed",
                options: [Opt.dataDir, Opt.json]) { _, args in
            try check(args)
        },
        Command("restore", "put back a set `seam backup` made (the files it replaces kept in backups/; every subscription resyncs)",
                operands: [Operand("DIR", "a directory seam backup wrote", complete: .directory)],
                options: [.flag("from-elsewhere", "the set may come from another data directory"), Opt.dataDir, Opt.json]) { operands, args in
            try restore(absolute(operands[0]), args)
        },
    ]

    /// seamd when one answers; nil when none does (the work is then done offline).
    static func broker(_ args: Arguments) throws -> SeamConnection? {
        do {
            let c = try SeamConnection.connect(path: args.value("socket"))
            try c.hello()
            return c
        } catch {
            if case .cannotConnect = error.kind { return nil }
            throw error
        }
    }

    static func dataDirectory(_ args: Arguments) -> StoreLayout {
        StoreLayout(directory: absolute(args.value("data-dir") ?? Environment.dataDirectory))
    }

    /// `path` made absolute against the working directory (seamd has another).
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileSystem.join(Environment.workingDirectory, path)
    }

    /// Shows a maintenance call's progress (`Progress`): a bar on a terminal, a line per store otherwise.
    final class ProgressShown {
        let progress = Progress()

        func show(_ what: String, _ p: JSON?) {
            guard let p else { return }
            let store = p["store"]?.stringValue ?? ""
            progress.show(store.isEmpty ? what : "\(what) \(store)", fraction: p["fraction"]?.doubleValue ?? 0)
        }

        func end() { progress.end() }
    }

    /// Runs a maintenance call through seamd with progress; returns its last reply.
    static func stream(_ c: SeamConnection, _ method: String, _ parameters: JSONObject, _ what: String, json: Bool) throws -> JSONObject {
        let shown = ProgressShown()
        var last: JSONObject = [:]
        defer { shown.end() }
        try c.stream(method, parameters) { reply in
            last = reply
            if reply["state"]?.stringValue == "running", !json { shown.show(what, reply["progress"]) }
        }
        return last
    }

    // MARK: - The commands

    static func backup(_ directory: String, _ args: Arguments) throws {
        let json = args.flag("json")
        var result: JSONObject
        if let c = try broker(args) {
            result = try stream(c, "org.seam.Maintenance.Backup", ["directory": .string(directory)], "backing up", json: json)
        } else {
            let shown = ProgressShown()
            let set = try BackupSet.take(from: dataDirectory(args), schema: TimerApp.schema, into: directory) { store, done, total in
                if !json { shown.show("backing up", ["store": .string(store), "fraction": .double(total > 0 ? Double(done) / Double(total) : 0)]) }
            }
            shown.end()
            result = ["directory": .string(set.directory), "stores": .array(set.stores.map { .string($0.name) }),
                      "sequence": .integer(set.sequence), "bytes": .integer(set.stores.reduce(0) { $0 + $1.bytes }), "offline": true]
        }
        result["state"] = nil
        if json { return output(.object(result)) }
        let stores = (result["stores"]?.arrayValue ?? []).compactMap(\.stringValue)
        print("backed up \(stores.joined(separator: ", ")) (through sequence \(result["sequence"]?.int64Value ?? 0), "
              + "\(megabytes(result["bytes"]?.int64Value ?? 0))) into \(directory); `seam restore \(directory)` puts it back")
    }

    static func check(_ args: Arguments) throws {
        let json = args.flag("json")
        var stores: [JSON]
        if let c = try broker(args) {
            stores = try stream(c, "org.seam.Maintenance.Check", [:], "checking", json: json)["stores"]?.arrayValue ?? []
        } else {
            stores = []
            let layout = dataDirectory(args)
            let shown = ProgressShown()
            for name in TimerApp.schema.configurations where FileSystem.kind(layout.store(name)) == "file" {
                let check = StoreCheck.run(name, path: layout.store(name)) { done, total in
                    if !json { shown.show("checking", ["store": .string(name), "fraction": .double(Double(done) / Double(total))]) }
                }
                stores.append(.object(["store": .string(name), "ok": .bool(check.problems.isEmpty),
                                       "problems": .array(check.problems.map(JSON.string)), "seconds": .double(check.seconds)]))
            }
            shown.end()
        }
        if json { return output(.array(stores)) }
        for s in stores {
            let name = s["store"]?.stringValue ?? "?"
            let seconds = Double(Int((s["seconds"]?.doubleValue ?? 0) * 100)) / 100
            if s["ok"]?.boolValue == true {
                print("\(name): ok (integrity_check, \(seconds) s)")
            } else {
                print("\(name): damaged")
                for p in s["problems"]?.arrayValue ?? [] { print("  \(Terminal.printable(p.stringValue ?? ""))") }
            }
        }
        let damaged = stores.filter { $0["ok"]?.boolValue != true }.compactMap { $0["store"]?.stringValue }
        guard damaged.isEmpty else {
            throw CLIError("\(damaged.joined(separator: ", ")) damaged; seamd closed \(damaged.count == 1 ? "it" : "them") (`seam status`). "
                           + "Put back a set `seam backup` made with `seam restore DIR`")
        }
    }

    static func restore(_ directory: String, _ args: Arguments) throws {
        let json = args.flag("json")
        var result: JSONObject
        if let c = try broker(args) {
            result = try stream(c, "org.seam.Maintenance.Restore",
                                ["directory": .string(directory), "fromElsewhere": .bool(args.flag("from-elsewhere"))], "restoring", json: json)
        } else {
            let layout = dataDirectory(args)
            let set = try BackupSet.read(directory)
            let shown = ProgressShown()
            let kept = try set.restoreOffline(into: layout, schema: TimerApp.schema, fromElsewhere: args.flag("from-elsewhere")) { done, total in
                if !json { shown.show("restoring", ["store": "", "fraction": .double(total > 0 ? Double(done) / Double(total) : 0)]) }
            }
            shown.end()
            result = ["stores": .array(set.stores.map { .string($0.name) }), "backups": .array(kept.map(JSON.string)), "offline": true]
        }
        result["state"] = nil
        if json { return output(.object(result)) }
        let stores = (result["stores"]?.arrayValue ?? []).compactMap(\.stringValue)
        let kept = (result["backups"]?.arrayValue ?? []).compactMap(\.stringValue)
        print("restored \(stores.joined(separator: ", ")) from \(directory)"
              + (kept.isEmpty ? "" : "; the files it replaced are kept in \(FileSystem.parentDirectory(kept[0]))"))
    }

    static func megabytes(_ bytes: Int64) -> String { "\(Double(Int(Double(bytes) / 104_857.6)) / 10) MB" }
}
