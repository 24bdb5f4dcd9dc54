import SeamStore
import SeamSystem

/// How the context keeps a damaged, vanished, replaced or read-only store file from being served
/// as if whole:
///
/// - **Checked at open** (`Options.checksAtOpen`): `PRAGMA quick_check` of each store that opens,
///   on a thread of its own with its own read-only connection. Meanwhile the store serves reads;
///   the owner holds writes back (`checking`). A check that finds problems closes the store as
///   damaged.
/// - **Damage at run time**: any `SQLITE_CORRUPT` or `SQLITE_NOTADB` from a store closes it at
///   once as damaged (`quarantined`); the call fails with `storeUnavailable`, no later write
///   reaches it, and the other store serves on.
/// - **A file that vanished or was replaced**: before each write transaction (and whenever the
///   owner asks, `verifyFiles`), the path is checked to still name the file the store opened
///   (device and inode). If it does not, the data is put back at its path from the connection
///   that still has the old file open (SQLite's backup API), whatever now stands there moved
///   aside, never deleted (`putBack`).
/// - **Read-only**: a store whose file cannot be written is served for reading (`readOnly`);
///   saves into it fail with `storeReadOnly`, naming the file.
extension Context {
    /// A check run on a checking thread: the store, the attachment it checked (`attachments`),
    /// what it found (empty: passed; a check that could not run counts as a problem), and how
    /// long it took.
    struct FinishedCheck: Sendable {
        var store: String
        var attachment: Int
        var problems: [String]
        var seconds: Double
    }

    /// What a finished check found, as `collectChecks` reports it.
    public struct CheckOutcome: Sendable {
        public var store: String
        /// Empty: the check passed.
        public var problems: [String]
        public var seconds: Double
    }

    /// Starts the check of a store that just opened (see the extension's documentation).
    func startCheck(_ name: String, path: String) {
        checking.insert(name)
        let attachment = attachments[name] ?? 0
        let finished = finishedChecks
        let notify = checkFinished
        let started = WallClock.monotonic()
        let run: @Sendable () -> Void = {
            var problems: [String]
            do {
                var o = Database.Options()
                o.readOnly = true
                let db = try Database(path: path, options: o)
                problems = try db.check(quick: true)
                db.close()
            } catch let error as DatabaseError where error.resultCode.isDamage {
                problems = ["'\(error.message)' (SQLite code \(error.code))"]
            } catch {
                problems = ["the check could not run: \(error)"]
            }
            finished.post(FinishedCheck(store: name, attachment: attachment, problems: problems, seconds: WallClock.monotonic() - started))
            notify.notify()
        }
        do { try Threads.detach(run) } catch { run() }  // no thread to be had: checked here, as an open would
    }

    /// Takes the checks that have finished, on the owner's thread: a store that passed takes
    /// writes from now on; one that did not is closed as damaged. Checks of a file since closed
    /// are ignored.
    public func collectChecks() -> [CheckOutcome] {
        let done = finishedChecks.take()
        var out: [CheckOutcome] = []
        for check in done where checking.contains(check.store) && attachments[check.store] == check.attachment {
            checking.remove(check.store)
            if !check.problems.isEmpty {
                markDamaged(check.store, "its check at open (quick_check) found " + Self.summarise(check.problems))
            }
            out.append(CheckOutcome(store: check.store, problems: check.problems, seconds: check.seconds))
        }
        return out
    }

    /// Something the context did on its own that its owner should log.
    public struct Notice: Sendable {
        /// An error needs a person (a store closed as damaged); a warning was handled (a file put back).
        public var isError: Bool
        public var text: String
    }

    /// Whether the context has something for the owner's log.
    public var hasNotices: Bool { !notices.isEmpty }

    /// What the context did on its own since the last call, for the owner's log.
    public func takeNotices() -> [Notice] {
        defer { notices = [] }
        return notices
    }

    /// Whether any store awaits its check at open: writes wait until none does.
    public var isChecking: Bool { !checking.isEmpty }

    /// "3 problems: 'Tree 4 page 7 …'; 'Page 9: …'".
    static func summarise(_ problems: [String]) -> String {
        let shown = problems.prefix(2).map { $0.hasPrefix("'") ? $0 : "'\($0)'" }.joined(separator: "; ")
        return problems.count == 1 ? "a problem: \(shown)" : "\(problems.count) problems, first \(shown)"
    }

    /// Closes a store as damaged: no further write reaches it, calls on it fail with a reason
    /// that says what was found and what to do.
    public func markDamaged(_ name: String, _ finding: String) {
        guard directory != nil else { return }
        damaged[name] = finding
        close(name, reason: Self.damagedReason(name, finding))
        notices.append(Notice(isError: true, text: "\(name) store closed: " + Self.damagedReason(name, finding)))
    }

    /// Why a damaged store is closed, and the next steps.
    public static func damagedReason(_ name: String, _ finding: String) -> String {
        "damaged: \(finding). It is closed so that nothing more is written into it. `seam check` reports every problem; "
            + "`seam restore DIR` puts back a set `seam backup DIR` made (`seam store info` lists the backups a migration kept)"
    }

    /// `error`, or — when it is SQLite saying a store's file is damaged (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`) — that store closed as damaged and the error turned into
    /// `storeUnavailable`. `store` names the store when the error does not (by its path).
    func quarantined(_ error: ContextError, store: String? = nil, entity: String = "") -> ContextError {
        let database: DatabaseError
        switch error.kind {
        case .database(let e): database = e
        case .store(let s):
            guard case .database(let e) = s.kind else { return error }
            database = e
        default: return error
        }
        guard database.resultCode.isDamage,
              let name = store ?? stores.first(where: { $0.value.db.path == database.path })?.key
        else { return error }
        markDamaged(name, "SQLite reported '\(database.message)' (code \(database.code))")
        var out = ContextError(.storeUnavailable(store: name, entity: entity, reason: closedStores[name] ?? "damaged"))
        out.operation = error.operation
        return out
    }

    /// What another connection to store `store`'s file met (a reader of the broker's): when it
    /// is damage, the store closes as damaged; the error to answer with, either way.
    public func reportDamage(_ error: DatabaseError, store: String, entity: String = "") -> ContextError {
        quarantined(ContextError(.database(error)), store: store, entity: entity)
    }

    /// Runs `body`; a damaged store it meets is closed (`quarantined`).
    func guarding<T>(entity: String = "", _ body: () throws(ContextError) -> T) throws(ContextError) -> T {
        do { return try body() } catch { throw quarantined(error, entity: entity) }
    }

    /// Why a file can only be read, in words.
    static func readOnlyReason(_ path: String) -> String {
        if let problem = FileSystem.writeProblem(path) { return "\(problem.message)" }
        return "SQLite opened it read-only (a read-only mount, or its -shm cannot be written)"
    }

    /// Refuses a save into a store that can only be read, or whose check at open has not passed.
    func requireWritable(_ name: String, entity: String) throws(ContextError) {
        if let why = readOnly[name], let path = stores[name]?.db.path {
            throw ContextError(.storeReadOnly(store: name, path: path, reason: why))
        }
        if checking.contains(name) {
            throw ContextError(.storeUnavailable(store: name, entity: entity, reason: "its file is being checked; try again in a moment"))
        }
    }

    // MARK: - Files that vanish or are replaced

    /// The open stores whose path no longer names the file they opened (removed, or something
    /// else moved there).
    public func changedFiles() -> [String] {
        // A store a save in steps holds is looked at by that save's last step.
        stores.keys.sorted().filter { $0 != steppedStore && fileChanged($0) }
    }

    /// Whether the path of open store `name` no longer names the file it opened: one `stat`,
    /// made only when the directory watch reports something done to that name since it was last
    /// looked at (or when there is no watch). The watch's report costs a `read` that finds
    /// nothing, most of the time.
    func fileChanged(_ name: String) -> Bool {
        guard let directory, let opened = identities[name], let path = stores[name]?.db.path else { return false }
        let file = name + ".sqlite"
        if !fileWatchMade {
            fileWatchMade = true
            fileWatch = try? DirectoryWatch(directory, names: schema.configurations.map { $0 + ".sqlite" })
            suspectFiles = Set(schema.configurations.map { $0 + ".sqlite" })  // what happened before the watch
        }
        if let watch = fileWatch {
            do { suspectFiles.formUnion(try watch.changed()) } catch {
                fileWatch = nil  // looked at every time from now on
            }
            if fileWatch != nil, suspectFiles.remove(file) == nil { return false }
        }
        guard let now = FileSystem.identity(path) else { return true }
        return !now.isSameFile(as: opened)
    }

    /// Puts back every store whose file vanished or was replaced (`putBack`); returns what was
    /// done, in words, for the owner's log. A store that cannot be put back is closed with why.
    public func verifyFiles() {
        for name in changedFiles() {
            do { notices.append(Notice(isError: false, text: try putBack(name))) } catch {
                notices.append(Notice(isError: true, text: "\(error)"))
            }
        }
    }

    /// Puts the data of store `name` back at its path from the connection that still has its
    /// file open: a consistent copy (SQLite's backup API, the WAL's commits included) written
    /// beside it, the store closed, whatever now stands at the path moved aside to
    /// `NAME.sqlite.replaced-TIME` (never deleted), the copy renamed into place and the store
    /// opened again. Returns what was done, in words. If that fails, the store is closed with
    /// the reason, and nothing more is written.
    func putBack(_ name: String) throws(ContextError) -> String {
        guard let directory, let handle = stores[name] else { return "" }
        let path = handle.db.path
        let copy = FileSystem.join(directory, ".\(name).sqlite.recovering")
        let found = FileSystem.identity(path)
        let what = found == nil ? "was removed" : "was replaced by another file (\(found!))"
        func fail(_ why: String) -> ContextError {
            close(name, reason: "its file \(path) \(what) while seamd served it, and could not be put back (\(why)); nothing more "
                  + "is written to it. Restore the store (`seam restore`), then restart seamd")
            return ContextError(.storeUnavailable(store: name, entity: "", reason: closedStores[name] ?? why))
        }
        do {
            try FileSystem.makeDirectory(directory)
            try StoreLayout.removeDatabase(copy)
        } catch {
            throw fail("\(error)")
        }
        do { try handle.db.backup(to: copy) } catch { throw fail("the copy failed: \(error)") }
        // The old file's connections go (their last close folds the WAL into the old file and
        // removes the WAL at the path, which is its own); then the path is free for the copy.
        close(name, reason: "its file is being put back")
        var aside: String?
        do {
            if FileSystem.exists(path) {
                let moved = path + ".replaced-" + WallClock.fileStamp(WallClock.now())
                try FileSystem.rename(path, to: moved)
                for suffix in ["-wal", "-shm"] where FileSystem.exists(path + suffix) {
                    try FileSystem.rename(path + suffix, to: moved + suffix)
                }
                aside = moved
            } else {
                for companion in StoreLayout.companions(path) { try FileSystem.remove(companion) }
            }
            try FileSystem.rename(copy, to: path)
            try FileSystem.syncDirectory(directory)
        } catch {
            throw fail("\(error)")
        }
        do { try reopen(name) } catch { throw fail("\(error)") }
        return "\(name): its file \(path) \(what) while seamd served it; its data was put back at that path from the file "
            + "seamd still had open" + (aside.map { ", and what stood there was moved to \($0)" } ?? "")
    }
}
