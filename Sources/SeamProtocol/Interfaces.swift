/// The varlink interface definitions Seam serves, as `GetInterfaceDescription` returns them.
/// The same texts are committed as `Protocol/org.seam.Store.varlink`,
/// `Protocol/org.seam.Migration.varlink` and `Protocol/org.varlink.service.varlink`; a test
/// keeps them equal.
public enum Interfaces {
    public static let vendor = "Seam"
    public static let product = "seamd"
    public static let version = "0.1.0"
    public static let url = "https://seam.invalid/protocol"
    /// Protocol versions this build speaks, for `Hello`.
    public static let protocolVersions = [1]

    public static let service = """
        # The service interface every varlink service provides: what this service is, and the
        # descriptions of the interfaces it implements.
        interface org.varlink.service

        # The service's vendor, product, version and url, and the interfaces it provides.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # The interface definition of one interface of the service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        error InterfaceNotFound (interface: string)
        error MethodNotFound (method: string)
        error MethodNotImplemented (method: string)
        error InvalidParameter (parameter: string)
        error PermissionDenied ()
        error ExpectedMore ()

        """

    public static let store = """
        # Seam's store broker: one context over the Cloud store (what syncs) and the Local store
        # (what stays on this machine). Rows are JSON objects keyed by attribute name; uuids are
        # lowercase strings, dates RFC 3339 UTC strings, json attributes JSON values.
        interface org.seam.Store

        # What a client reads and writes: entity names. Writing an entity includes reading it.
        type Capabilities (reads: ?[]string, writes: ?[]string)

        # Negotiates the protocol version and declares who the client is. A client that never
        # says Hello may read but not write. The broker sets the author of a client's saves
        # from the connection: "cli", or "plugin:NAME". A client that declares capabilities
        # is held to them (PermissionDenied outside them); a plugin that declares none may
        # read and write nothing.
        method Hello(version: int, role: ?string, name: ?string, capabilities: ?Capabilities) -> (
          version: int,
          role: string,
          author: string,
          product: string,
          sequence: int
        )

        # The models this broker serves, with their versions, hashes and entities.
        method Schema() -> (models: []object)

        # The rows of an entity that match a predicate, in order; or, given a uuid, that one row.
        method Fetch(
          entity: string,
          uuid: ?string,
          predicate: ?string,
          parameters: ?object,
          sort: ?string,
          limit: ?int,
          offset: ?int,
          fields: ?[]string
        ) -> (rows: []object, sequence: int)

        # How many rows of an entity match a predicate.
        method Count(entity: string, predicate: ?string, parameters: ?object) -> (count: int, sequence: int)

        type Insert (entity: string, values: object)
        type Update (entity: string, uuid: string, values: object)
        type Delete (entity: string, uuid: string)
        type Change (store: string, entity: string, uuid: string, kind: string, changedKeys: []string)

        # Inserts, updates and deletes as one transaction across both stores. Link rules run on
        # deletes; their effects are among the changes. With unchangedSince, a Conflict if the
        # history after that sequence number changed a row this save would change. The reply
        # lists the changes (reply: changes, the default), or says how many (reply: count).
        method Save(inserts: ?[]Insert, updates: ?[]Update, deletes: ?[]Delete, unchangedSince: ?int, reply: ?(changes, count)) -> (
          sequence: ?int,
          changes: ?[]Change,
          changed: ?int
        )

        # The broker's state: version, process, connections, subscriptions, stores, roles.
        # Each store: name, path, size, state (open, outdated: served at an older version,
        # migrating, or closed), versions (model, version, oldest: the oldest version of the same
        # shape, current), reason (why it is not
        # open), backup (the original the last migration replaced), checkpoints. migration:
        # running, stores, progress (see org.seam.Migration), worker, last (how the last ended).
        method Status() -> (
          product: string,
          version: string,
          pid: int,
          uptime: float,
          connections: int,
          subscriptions: int,
          channels: int,
          sequence: int,
          rss: int,
          stores: []object,
          roles: []Role,
          plugins: []Plugin,
          configurationProblems: []string,
          migration: object,
          backups: []object,
          maintenance: ?object,
          readers: object,
          saveInSteps: ?object
        )

        # A connected plugin and what it may read and write (null: every entity).
        type Plugin (
          name: string,
          author: string,
          pid: int,
          supervised: bool,
          declared: bool,
          reads: ?[]string,
          writes: ?[]string
        )

        # A process seamd supervises: state is running, waiting (to be restarted, in
        # restartIn seconds) or stopped; lastError says how it last ended or failed to start.
        type Role (
          name: string,
          role: string,
          state: string,
          command: []string,
          restarts: int,
          pid: ?int,
          uptime: ?float,
          restartIn: ?float,
          lastError: ?string
        )

        type Deleted (uuid: string, index: int)
        type Inserted (uuid: string, index: int, row: object)
        type Updated (uuid: string, index: int, changedKeys: []string, row: object)
        type Moved (uuid: string, from: int, to: int)

        # A live query; call it with "more". The first reply is the whole result ("result"),
        # or, with since, the diff from the result at that sequence number ("diff") or the whole
        # result when the broker no longer holds the changes since then ("resync", with from).
        # Each later reply is the diff one commit made ("diff"), or, for a subscriber that fell
        # behind, the whole result ("resync", with from: the last sequence it had). Diff indexes:
        # deleted and moved.from are positions in the previous result; inserted, updated and
        # moved.to in the new one. The last reply, without "continues", has kind "end".
        method Subscribe(
          entity: string,
          predicate: ?string,
          parameters: ?object,
          sort: ?string,
          limit: ?int,
          fields: ?[]string,
          since: ?int
        ) -> (
          subscription: int,
          kind: string,
          sequence: int,
          from: ?int,
          rows: ?[]object,
          deleted: ?[]Deleted,
          inserted: ?[]Inserted,
          updated: ?[]Updated,
          moved: ?[]Moved
        )

        # Ends a subscription of this connection; its call then gets its last reply.
        method Unsubscribe(subscription: int) -> ()

        error InvalidRequest (message: string, field: ?string)
        error NotFound (entity: string, uuid: string, message: string)
        error Conflict (message: string)
        error PermissionDenied (message: string)
        error UnsupportedVersion (supported: []int, message: string)
        error StoreFailure (message: string)
        error ShuttingDown (message: string)
        error SequenceAhead (since: int, sequence: int, message: string)
        error LimitReached (message: string)
        error StoreUnavailable (store: string, message: string)
        # A save into a store whose file can only be read; reads of it work.
        error StoreReadOnly (store: string, path: string, message: string)
        # A query past seamd's limits: a predicate that costs too much per row (refused before it
        # runs), or a statement past its time budget (stopped). limit names the setting.
        error QueryTooExpensive (message: string, limit: string)
        # A value, or a synced record's values together, past its bound in bytes (limit); field names
        # the attribute, or its place in the Save (inserts[2].values.name).
        error ValueTooLarge (message: string, field: string, limit: int)

        """

    public static let migration = """
        # Migrating outdated stores while seamd serves the others. seamd closes the stores a
        # migration touches; its worker (seam-migrate, in the role "migrate") reads them
        # read-only, builds verified copies beside them and reports progress; seamd verifies
        # the copies again, swaps them in (keeping each original in backups/) and reopens the
        # stores. On any failure the originals return to service at their old versions.
        interface org.seam.Migration

        # How far a migration is. phase: preparing, copying, indexing, verifying, swapping or
        # done; fraction from rows copied, or from bytes for a byte copy; estimate in seconds.
        type Progress (
          phase: string,
          store: string,
          entity: ?string,
          rowsDone: int,
          rowsTotal: int,
          bytesWritten: int,
          bytesTotal: int,
          fraction: float,
          elapsed: float,
          estimate: ?float
        )

        # What a migration would do now: the stores it touches, and each step in words and SQL.
        method Plan() -> (needed: bool, running: bool, stores: []string, text: string)

        # A store that is not serving, and why.
        type ClosedStore (store: string, reason: string)

        # Starts the migration, or joins the one running. state is "current" (nothing to do),
        # "running" (with more: one reply per progress report, then the last), or "done".
        # closed: stores migrated that did not open again (seamd tries again, up to every minute).
        method Migrate() -> (
          state: string,
          stores: []string,
          progress: ?Progress,
          backups: ?[]string,
          closed: ?[]ClosedStore
        )

        # The worker's calls (role "migrate" only): progress, success, failure.
        method Report(
          phase: string,
          store: string,
          entity: ?string,
          rowsDone: int,
          rowsTotal: int,
          bytesWritten: int,
          bytesTotal: int
        ) -> ()
        method Finished() -> (backups: []string)
        method Failed(message: string) -> ()

        error MigrationFailed (message: string)

        """

    public static let sync = """
        # Sync of the Cloud store through a server (PostgreSQL). seamd starts the sync worker,
        # seam-sync (in the role "sync"), once sync is configured; the worker exports the
        # Cloud store's history and imports the server's changes through org.seam.Store.Save,
        # where the broker makes "sync" their author, so that they are never exported again.
        # Nothing from the Local store is ever exported.
        interface org.seam.Sync

        # One changed row of the persistent history. row is the row after the change, as
        # Fetch encodes rows; null for a delete.
        type HistoryChange (
          sequence: int,
          author: string,
          time: float,
          entity: string,
          uuid: string,
          kind: string,
          changedKeys: []string,
          row: ?object
        )

        # How sync stands: configured, running, and what the worker last reported: server (the
        # URL, never a password), state, lastPush and lastPull (Unix seconds), pending (local
        # changes not yet exported), pushed and pulled (records so far), lastError, and nextTry
        # (Unix seconds) while the worker waits out a pause before it tries again; setAside, the
        # records sync passes over (type, uuid, tag, reason: sync.md).
        method Status() -> (
          configured: bool,
          running: bool,
          server: ?string,
          state: ?string,
          lastPush: ?float,
          lastPull: ?float,
          pending: ?int,
          pushed: ?int,
          pulled: ?int,
          lastError: ?string,
          nextTry: ?float,
          setAside: ?[]object
        )

        # Asks the worker to sync now (it also syncs on its own on every change, and polls).
        method Now() -> ()

        # Reads the sync configuration again (after `seam sync setup`): starts, restarts or
        # stops the worker. action: started, restarted, stopped or none.
        method Reload() -> (action: string)

        # The worker's calls (role "sync" only). History after a sequence number, oldest
        # first; last is the sequence of the last change set returned.
        method History(since: int, limit: ?int) -> (changes: []HistoryChange, last: int, sequence: int)

        # The synced configuration's entities as their store holds them now (an older version
        # while it awaits migration; none while it is closed): what the worker may write. Each:
        # name, model, attributes, encrypted (the attributes the worker seals for the server).
        # Anyone may ask.
        method Served() -> (entities: []object)

        # Forgets the history through a sequence number: the worker has exported it.
        method Acknowledge(through: int) -> ()

        # With more: a reply whenever a local commit touches the Cloud store ("commit") or a
        # sync is asked for ("now"); the first reply says "listening".
        method Listen() -> (event: string, sequence: int)

        # The worker's state, as Status shows it.
        method Report(
          server: string,
          state: string,
          lastPush: ?float,
          lastPull: ?float,
          pending: int,
          pushed: int,
          pulled: int,
          lastError: ?string,
          nextTry: ?float,
          setAside: ?[]object
        ) -> ()

        error NotConfigured (message: string)

        """

    public static let maintenance = """
        # Keeping the stores safe while seamd serves them (for clients that said Hello as "cli"):
        # a consistent backup set of every store, SQLite's full integrity check, and putting a
        # backup set back. One runs at a time; with more, each sends a reply per step of
        # progress ("running"), then the last ("done").
        interface org.seam.Maintenance

        # How far the work is: the store it is at, bytes (Backup, Restore) or check steps
        # (Check, an estimate from the store's size) done of the total, and seconds so far.
        type Progress (store: string, done: int, total: int, fraction: float, elapsed: float)

        # What Check found in one store: ok, or the problems SQLite reported (at most 20).
        type StoreCheck (store: string, ok: bool, problems: []string, seconds: float)

        # Takes every store, as one moment between saves, into directory (absolute, new or
        # empty): each store's file, the sequence lease and seam-backup.json. Saves go on
        # meanwhile; they are not in the set.
        method Backup(directory: string) -> (
          state: string,
          progress: ?Progress,
          directory: ?string,
          stores: ?[]string,
          sequence: ?int,
          bytes: ?int
        )

        # PRAGMA integrity_check of every store file, read-only, on a connection of its own. A
        # store found damaged is closed (its state in Status: "damaged").
        method Check() -> (state: string, progress: ?Progress, stores: ?[]StoreCheck)

        # Puts a backup set back: the set is checked (every store present, readable by this
        # build, quick_check), the stores are closed, the set's files swapped in as a
        # migration's copies are (the files they replace kept in a generation of backups/,
        # reason "restore"), and the stores reopened at a new sequence number: every
        # subscription gets a resync. fromElsewhere: the set may come from another data directory.
        method Restore(directory: string, fromElsewhere: ?bool) -> (
          state: string,
          progress: ?Progress,
          stores: ?[]string,
          backups: ?[]string
        )

        error MaintenanceFailed (message: string)

        """

    public static let metrics = """
        # What seamd counts of itself, for monitoring (any client that said Hello): counters since
        # seamd started, gauges as they are now, histograms. `seam metrics` prints them in
        # Prometheus's text format; the `metrics` role serves that text over HTTP on 127.0.0.1.
        # The families and their labels are listed in PROTOCOL.md ("Metrics").
        interface org.seam.Metrics

        # One sample: its labels; value for a counter or a gauge (null when not a finite number);
        # buckets ([upper bound, observations at or below it], ascending), sum and count for a
        # histogram (the +Inf bucket is count).
        type Sample (
          labels: [string]string,
          value: ?float,
          buckets: ?[][]float,
          sum: ?float,
          count: ?int
        )

        # A metric: its name (Prometheus's rules), type ("counter", "gauge" or "histogram"), what
        # it measures, and its samples.
        type Family (name: string, type: string, help: string, samples: []Sample)

        method Get() -> (families: []Family)

        """

    /// Interface name → description.
    public static let all: [String: String] = [
        "org.varlink.service": service, "org.seam.Store": store, "org.seam.Migration": migration,
        "org.seam.Sync": sync, "org.seam.Maintenance": maintenance,
        "org.seam.Metrics": metrics,
    ]
}
