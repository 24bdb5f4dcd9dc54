import SeamClient
import SeamCommandLine
import SeamJSON
import SeamProtocol
import SeamSchema
import SeamSystem
import SeamTimers

/// A failure to report in one line.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The connection of this invocation: `--socket`, else `$SEAM_FD`, `$SEAM_SOCKET`, the default.
func connect(_ args: Arguments, hello: Bool = true) throws -> SeamConnection {
    let c = try SeamConnection.connect(path: args.value("socket"))
    if hello { try c.hello() }
    return c
}

func output(_ json: JSON) { print(String(decoding: json.encoded(), as: UTF8.self)) }

/// Rows with their keys in sorted order. The rows of one fetch have the same keys in the same
/// order, so the order is worked out once and reused while the next row's keys are the same.
struct KeyOrder {
    private var keys: [String] = []
    private var permutation: [Int] = []

    mutating func sorted(_ row: JSONObject) -> JSONObject {
        if !row.keys.elementsEqual(keys) {
            keys = Array(row.keys)
            permutation = keys.indices.sorted { keys[$0] < keys[$1] }
        }
        return row.reordered(permutation)
    }
}

/// `items` as one JSON array on one line, the same bytes as `output(.array(…))`, written in
/// pieces as they are made: a listing of 100,000 rows never holds its whole text.
func outputArray<T>(_ items: [T], _ json: (T) -> JSON) {
    Terminal.flushOutput()  // what `print` holds goes first
    var bytes: [UInt8] = [UInt8(ascii: "[")]
    for (i, item) in items.enumerated() {
        if i > 0 { bytes.append(UInt8(ascii: ",")) }
        json(item).encode(into: &bytes)
        if bytes.count >= 1 << 16 {
            Descriptors.write(1, bytes)
            bytes.removeAll(keepingCapacity: true)
        }
    }
    bytes.append(contentsOf: "]\n".utf8)
    Descriptors.write(1, bytes)
}

/// Starts a listing, which holds every row at once and then ends `seam`: one heap that grows in
/// large steps serves it (see `Memory.preferOneGrowingHeap`; not for `seam watch`, which runs on).
func prepareForListing() {
    Memory.preferOneGrowingHeap()
}

/// Ends `seam` once a listing is written: the kernel takes back the memory of 100,000 rows at
/// once, rather than Swift freeing it row by row (a tenth of `seam ls --json`'s time).
func exitAfterListing() -> Never {
    Terminal.flushOutput()
    Terminal.exit(0)
}

/// Each timer-app entity's attribute types by name, looked up once per cell of a listing.
private let attributeTypes: [String: [String: AttributeType]] = Dictionary(
    uniqueKeysWithValues: TimerApp.schema.models.flatMap(\.current.entities).map { e in
        (e.name, e.attributeTypes)
    })

/// A row from the wire as attribute values, typed by the timer model (for the domain code).
/// With `only`, just those attributes (what a listing sorts and joins by).
func values(_ row: JSONObject, entity: String, only: Set<String>? = nil) -> [String: AttributeValue] {
    guard let types = attributeTypes[entity] else { return [:] }
    var out: [String: AttributeValue] = [:]
    out.reserveCapacity(only?.count ?? row.count)
    for (k, v) in row where only?.contains(k) ?? true {
        guard let type = types[k], case .success(let value) = WireValues.decode(v, as: type) else { continue }
        out[k] = value
    }
    return out
}

/// Finds one row by what a person types: a whole uuid, a short id (4 or more characters from
/// either end of its uuid, `ShortID`), a name, or a name in another case. More than one match lists them; none says where to look.
func pick(_ kind: String, _ text: String, from rows: [JSONObject], listing: String) throws -> JSONObject {
    switch find(text, in: rows) {
    case .one(let row): return row
    case .many(let rows): throw ambiguous(text, rows)
    case .none:
        let short = text.count < 4 && text.allSatisfy(\.isHexDigit) ? " (a short id needs at least \(ShortID.minimumLength) characters)" : ""
        throw CLIError("no \(kind) named '\(Terminal.printable(text))' or with a uuid starting or ending so\(short); \(listing) lists them")
    }
}

enum Found {
    case one(JSONObject)
    case many([JSONObject])
    case none
}

/// The rows `text` names. A whole uuid names its row. Otherwise `text` names the rows called so
/// (exactly, else in another case when none is) and, together with them, the rows whose uuid
/// starts with it: a timer called `beef` and another whose uuid starts with beef are both
/// named, and the caller asks which is meant rather than guess (`seam timer rm beef` once
/// deleted the other one, a uuid prefix being tried first). A short id matches either end of a
/// uuid (`ShortID`).
func find(_ text: String, in rows: [JSONObject]) -> Found {
    let lower = text.lowercased()
    let whole = rows.filter { $0["uuid"]?.stringValue == lower }
    if !whole.isEmpty { return found(whole) }
    var named = rows.filter { $0["name"]?.stringValue == text }
    if named.isEmpty { named = rows.filter { $0["name"]?.stringValue?.lowercased() == lower } }
    let prefixed = rows.filter { ShortID.matches(lower, $0["uuid"]?.stringValue ?? "") }
    let namedUUIDs = Set(named.compactMap { $0["uuid"]?.stringValue })
    return found(named + prefixed.filter { !namedUUIDs.contains($0["uuid"]?.stringValue ?? "") })
}

private func found(_ rows: [JSONObject]) -> Found {
    switch rows.count {
    case 0: .none
    case 1: .one(rows[0])
    default: .many(rows)
    }
}

/// The most rows an ambiguity lists: a store of thousands of look-alikes must not fill the screen.
let ambiguityListLimit = 10

/// "'tea' could be any of: …": each row's name (as store text, escaped) and the start of its uuid.
func ambiguous(_ text: String, _ rows: [JSONObject]) -> CLIError {
    var names = rows.prefix(ambiguityListLimit).map { row in
        Terminal.printable("\(row["name"]?.stringValue ?? "?") (\(ShortID.of(row["uuid"]?.stringValue ?? "")))")
    }
    if rows.count > ambiguityListLimit { names.append("… and \(rows.count - ambiguityListLimit) more") }
    return CLIError("'\(Terminal.printable(text))' could be any of: \(names.joined(separator: ", ")); give more of a uuid")
}

let timerOrder = "sortOrder, name[c]"
/// What `TimerList` sorts and joins a timer by.
let timerListKeys: Set = ["uuid", "name", "groupUUID", "sortOrder"]
func timers(_ c: SeamConnection) throws -> [JSONObject] { try c.fetch("Timer", sort: timerOrder) }
func groups(_ c: SeamConnection) throws -> [JSONObject] { try c.fetch("UserGroup", sort: "sortOrder, name[c]") }

func resolveTimer(_ c: SeamConnection, _ text: String) throws -> JSONObject {
    try pick("timer", text, from: try timers(c), listing: "seam timer ls")
}

func resolveGroup(_ c: SeamConnection, _ text: String) throws -> JSONObject {
    try pick("group", text, from: try groups(c), listing: "seam group ls")
}

/// A session by its uuid (or prefix) or name, or the session of a timer named so.
func resolveSession(_ c: SeamConnection, _ text: String) throws -> String {
    let sessions = try c.fetch("Session", sort: "-startedAt")
    let allTimers = try timers(c)
    // Running and paused sessions first: a name a finished one had too (a flash started again
    // under its name, before `seam clear`) means the one still going.
    for pool in [sessions.filter { $0["state"]?.stringValue != "finished" }, sessions] {
        switch find(text, in: pool) {
        case .one(let s):
            // Found by its uuid's start, while a timer is called so (`seam stop 3af5`, a timer
            // named 3af5 not running, another's session 3af5…): which is meant is asked, not guessed.
            let lower = text.lowercased()
            if s["name"]?.stringValue?.lowercased() != lower {
                let named = allTimers.filter { t in
                    t["name"]?.stringValue?.lowercased() == lower && t["uuid"]?.stringValue != s["timerUUID"]?.stringValue
                }
                if !named.isEmpty { throw ambiguous(text, [s] + named) }
            }
            return s["uuid"]!.stringValue!
        case .many(let rows): throw ambiguous(text, rows)
        case .none: continue
        }
    }
    let timer = try pick("session or timer", text, from: allTimers, listing: "seam ls")
    let u = timer["uuid"]!.stringValue!
    guard let s = sessions.first(where: { $0["timerUUID"]?.stringValue == u }) else {
        throw CLIError("'\(Terminal.printable(timer["name"]?.stringValue ?? text))' is not running; start it with seam start")
    }
    return s["uuid"]!.stringValue!
}

/// `text` as the name of a new or renamed row, refused (a usage error) when it is empty, only
/// white space or only characters of no width (U+200B): a name nobody could see in a list or
/// type again.
func nonEmptyName(_ text: String, of what: String) throws(Arguments.UsageError) -> String {
    guard text.contains(where: { !$0.isWhitespace && DisplayWidth.columns($0) > 0 }) else {
        throw Arguments.UsageError("\(what)'s name cannot be empty or only spaces")
    }
    return text
}

/// Refuses a timer's or group's new name that another of `rows` (not the row `renaming`) has
/// already: `--group G1` and `seam start G1` would then be ambiguous. (Sync can still bring two
/// of a name, made offline on two machines; listings tell those apart by their short ids.)
func requireNewName(_ name: String, among rows: [JSONObject], kind: String, renaming: String? = nil) throws {
    guard let twin = rows.first(where: { $0["name"]?.stringValue == name && $0["uuid"]?.stringValue != renaming }) else { return }
    let id = ShortID.of(twin["uuid"]?.stringValue ?? "")
    throw CLIError("a \(kind) named '\(Terminal.printable(name))' exists already (\(id)); give this one another name")
}

/// `--step LABEL=DURATION …` as the JSON the store keeps; a step of the wrong form, or too
/// many, is a usage error (exit 64), said before anything is saved.
func stepsJSON(_ arguments: [String]) throws -> JSON {
    guard arguments.count <= SessionClock.maxSteps else {
        throw Arguments.UsageError("a timer has at most \(SessionClock.maxSteps) steps; \(arguments.count) given")
    }
    let steps = try arguments.map { a in try asUsage { () throws(TimerInputError) in try Step.parse(a) } }
    return .array(steps.map { ["label": .string($0.label), "seconds": .integer(Int64($0.seconds))] })
}

/// A value a person typed, read by `body`: its error is a usage error (a value of the wrong form).
func asUsage<T>(_ body: () throws(TimerInputError) -> T) throws -> T {
    do { return try body() } catch { throw Arguments.UsageError(error.description) }
}

func describeSteps(_ json: JSON?) -> String {
    let steps = (json?.arrayValue ?? []).compactMap { s -> String? in
        guard let l = s["label"]?.stringValue, let n = s["seconds"]?.int64Value else { return nil }
        return "\(l) \(DurationText.format(Int(n)))"
    }
    return steps.isEmpty ? "(no steps)" : steps.joined(separator: ", ")
}

/// The most columns a cell takes, by its column's header: one long name or note must not widen
/// the table past the screen (which wraps every line of it), nor pad every line of a listing a
/// program reads to the longest value (one synced 1 MiB name made `seam timer ls` print 198 MB).
/// On a terminal, to fit it; through a pipe or into a file, more, but never without bound
/// (`--json` gives every value whole).
let terminalCellLimits = ["NAME": 40, "GROUP": 24, "NOTE": 40]
let terminalOtherCells = 60
let pipedCellLimit = 200

/// Rows as aligned columns, the first row the header; cells shown as `Terminal.printable` makes
/// them, measured in terminal columns (a CJK character or an emoji takes two), each cut to its
/// column's limit (`terminalCellLimits`, `pipedCellLimit`).
func table(_ rows: [[String]], onTerminal: Bool = Terminal.stdoutIsTerminal) {
    guard let header = rows.first else { return }
    let limitOfColumn = header.map { onTerminal ? terminalCellLimits[String($0.drop(while: { $0 == " " }))] ?? terminalOtherCells : pipedCellLimit }
    let rows = rows.map { row in
        row.enumerated().map { i, cell in
            let shown = Terminal.printable(cell)
            guard i < limitOfColumn.count else { return DisplayWidth.cut(shown, to: pipedCellLimit) }
            return DisplayWidth.cut(shown, to: limitOfColumn[i])
        }
    }
    var widths = header.map { _ in 0 }
    for r in rows { for (i, cell) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], DisplayWidth.columns(cell)) } }
    for r in rows {
        let cells = r.enumerated().map { i, cell in i == r.count - 1 ? cell : DisplayWidth.padded(cell, to: widths[i]) }
        print(cells.joined(separator: "  "))
    }
}

extension String {
    /// Without whitespace (newlines too) at either end.
    var trimmingSpaces: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
