import SeamSchema
import SeamSystem

/// Why a store could not be opened, classified or migrated.
///
/// Every refusal names the file, what it holds and what this build expects, and says what to do.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The file is not a SQLite database, or is damaged.
        case notAStore(detail: String)
        /// The path names no plain file: a directory, a symbolic link, a FIFO, a socket or a device.
        case notAFile(kind: String)
        /// A model in the file is at a version newer than this build knows.
        case newer(model: String, storedVersion: Int, knownVersion: Int)
        /// The file's shape matches no known version and it carries no usable embedded model.
        case unknown(detail: String)
        /// The migration would have to guess whether something was renamed.
        case ambiguous(model: String, entity: String, removed: String, added: String)
        /// An attribute changed type, which an inferred migration cannot convert.
        case typeChange(model: String, entity: String, attribute: String, from: AttributeType, to: AttributeType)
        /// The store needs a migration before it can be used.
        case needsMigration(detail: String)
        /// The migrated copy failed verification; the original is untouched.
        case verificationFailed(detail: String)
        /// A custom stage threw.
        case stageFailed(detail: String)
        /// Building a migration copy failed (a full disk, an I/O error); the original is untouched.
        case copyFailed(DatabaseError)
        /// The same, failed by a file operation (`ENOSPC` while copying, say).
        case copyFailedInFileSystem(SystemError)
        /// The directory cannot be written (read-only file system or permissions).
        case readOnly(detail: String)
        /// Another process holds the file in a way that stops the work (a reader's snapshot
        /// keeps the WAL from being folded in).
        case inUse(detail: String)
        /// A migration's verified copies wait to be swapped in (`migration.intent`): no other
        /// migration may start until that swap is finished.
        case swapPending(detail: String)
        /// The file holds an object no model version declares (`ForeignObject`) that the
        /// migration cannot carry into the copy; refused before anything is copied.
        case cannotCarry(ForeignObject, detail: String)
        /// SQLite failed.
        case database(DatabaseError)
        /// A file operation failed.
        case system(SystemError)
    }

    public var kind: Kind
    /// The store file (or directory) concerned.
    public var path: String

    public init(_ kind: Kind, path: String) {
        self.kind = kind
        self.path = path
    }

    /// What went wrong, without the advice `description` ends with, where a caller gives its
    /// own (a swap that stopped part way: what stops it).
    public var cause: String {
        if case .swapPending(let detail) = kind { return detail }
        return description
    }

    /// What to do with a damaged store file at `path`: put back the newest copy `backups/` keeps
    /// of it, naming it — or, with none kept, move it aside (advice that names backups/ when it
    /// holds nothing sends a person looking for what is not there).
    static func restoreAdvice(for path: String) -> String {
        let name = String(path.split(separator: "/").last ?? "")
        let store = name.hasSuffix(".sqlite") ? String(name.dropLast(".sqlite".count)) : name
        let layout = StoreLayout(directory: FileSystem.parentDirectory(path))
        if let kept = Backups.list(layout).filter({ $0.stores.contains(store) }).max(by: { $0.createdAt < $1.createdAt }) {
            return "Restore it from \(kept.file(store)) (the newest copy backups/ keeps; made by \(kept.reason == "earlier Seam" ? "an earlier Seam" : "a " + kept.reason)), "
                + "or move it aside to start afresh"
        }
        return "backups/ keeps no copy of it: move it aside to start afresh (or put back a set `seam backup` made, "
            + "with `seam restore`)"
    }

    public var description: String {
        switch kind {
        case .notAStore(let detail):
            return "\(path) is damaged or not a Seam store (\(detail)); it was left untouched. " + Self.restoreAdvice(for: path)
        case .notAFile(let kind):
            let what = ["link": "a symbolic link", "fifo": "a FIFO (named pipe)", "directory": "a directory", "socket": "a socket"][kind]
                ?? "a \(kind)"
            return "\(path) is \(what), not a store file; it was left untouched. Seam keeps each store as a plain file in its "
                + "data directory: move it aside (or point --data-dir, SEAM_DATA_DIR, at the directory that holds the files)"
        case .newer(let model, let stored, let known):
            return "\(path) holds \(model) version \(stored), newer than this build, which knows up to version \(known); "
                + "it was left untouched. Use a newer Seam"
        case .unknown(let detail):
            return "\(path) holds a shape this build does not know (\(detail)); it was left untouched. Open it with the "
                + "Seam build that wrote it, or move it aside to start afresh"
        case .ambiguous(let model, let entity, let removed, let added):
            return "\(path): migrating \(model).\(entity) would drop '\(removed)' and add '\(added)' of the same type; "
                + "declare a rename (renamingIdentifier) or remove it explicitly. Nothing was changed"
        case .typeChange(let model, let entity, let attribute, let from, let to):
            return "\(path): \(model).\(entity).\(attribute) changed type from \(from.rawValue) to \(to.rawValue); "
                + "an inferred migration cannot convert it. Nothing was changed"
        case .needsMigration(let detail):
            return "\(path) needs a migration (\(detail)); run `seam-migrate` on its directory"
        case .verificationFailed(let detail):
            return "\(path): the migrated copy failed verification (\(detail)); the original is untouched"
        case .stageFailed(let detail):
            return "\(path): a custom migration stage failed (\(detail)); the original is untouched"
        case .copyFailed(let e):
            let hint = e.isDiskFull
                ? "the disk is full: free some space and run the migration again"
                : "run the migration again once the cause is fixed"
            return "\(path): the migration failed (\(e)); the original is untouched, \(hint)"
        case .copyFailedInFileSystem(let e):
            let hint = e.errno == SystemError.noSpace
                ? "the disk is full: free some space and run the migration again"
                : "run the migration again once the cause is fixed"
            return "\(path): the migration failed (\(e)); the original is untouched, \(hint)"
        case .readOnly(let detail):
            return "\(path) cannot be written (\(detail)); nothing was changed. Make it writable, or move the stores to a "
                + "writable place"
        case .inUse(let detail):
            return "\(path) is in use by another process (\(detail)); nothing was changed. Close what has it open (an sqlite3 "
                + "shell, a backup tool) and try again"
        case .swapPending(let detail):
            return "\(path): a migration's verified copies wait to be swapped in (\(detail)); no other migration starts "
                + "until that swap is finished. Fix what stopped it, then run the migration again or restart seamd"
        case .cannotCarry(let object, let detail):
            let drop = "DROP \(object.kind.rawValue.uppercased()) \(SchemaSQL.quote(object.name))"
            return "\(path) holds \(object.summary), which is not Seam's, and the migration cannot keep it (\(detail)); nothing "
                + "was copied or changed. Make it fit the new version (rename a table whose name the new version takes), or, if "
                + "it is no longer needed, drop it (sqlite3 \(path) '\(drop)'), then migrate again"
        case .database(let e):
            return "\(path): \(e)"
        case .system(let e):
            return "\(path): \(e)"
        }
    }
}
