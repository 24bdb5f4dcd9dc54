import Foundation
import SeamJSON
import SeamPostgres
@testable import SeamSync
import SeamSyncSetup
import SeamTestSupport
import XCTest

/// What the server holds, read as a zone's machines read it: the tests look at records through
/// the superuser's connection, and their encrypted fields are sealed (`FieldSeal`). The keys
/// are those of the machines the tests set up (`SyncMachine` adds each), found by the id the
/// zone's key record names.
enum ServerRecords {
    nonisolated(unsafe) static var keys: [String: ZoneKey] = [:]
    /// Records a test wrote in clear on purpose, as a rogue client of the zone would (the check
    /// below passes over them: the workers seal them when they next look, which may be after the
    /// test has ended).
    nonisolated(unsafe) static var inClearOnPurpose: Set<String> = []
    static let lock = NSLock()

    /// Remembers the key in a machine's configuration directory, once it has one.
    static func learn(configDirectory: String) {
        guard let key = try? ZoneKey.read(ZoneKey.path(in: configDirectory)) else { return }
        lock.withLock { keys[key.id] = key }
    }

    /// The key the zone's records are sealed with, when a machine of the tests holds it.
    static func key(_ pg: PostgresConnection, zone: String) throws -> ZoneKey? {
        let id = try pg.query("SELECT fields->>'key' FROM seam.records WHERE zone = $1 AND record_type = 'seam.key'", [zone]).first?[0] ?? nil
        return id.flatMap { id in lock.withLock { keys[id] } }
    }

    /// The records `condition` selects (SQL over seam.records, `$1`… from `parameters`), their
    /// sealed fields opened.
    static func records(_ pg: PostgresConnection, where condition: String, _ parameters: [String?] = []) throws
        -> [(zone: String, type: String, uuid: String, fields: JSONObject)] {
        var out: [(zone: String, type: String, uuid: String, fields: JSONObject)] = []
        var seals: [String: FieldSeal] = [:]
        for row in try pg.query("SELECT zone::text, record_type, uuid::text, fields::text FROM seam.records WHERE \(condition)", parameters) {
            guard let zone = row[0], let type = row[1], let uuid = row[2], var fields = (try? JSON.decode(row[3] ?? "{}"))?.objectValue
            else { continue }
            if fields.values.contains(where: FieldSeal.isSealed) {
                if seals[zone] == nil, let key = try key(pg, zone: zone) { seals[zone] = FieldSeal(key: key, zone: zone) }
                if let seal = seals[zone], case .success(let clear) = seal.open(fields, entity: type, uuid: uuid) { fields = clear }
            }
            out.append((zone, type, uuid, fields))
        }
        return out
    }

    /// The field of record `uuid` as `fields->>'NAME'` gives it in clear: a string as it is,
    /// anything else as JSON text; nil when absent.
    static func field(_ pg: PostgresConnection, _ uuid: String, _ name: String) throws -> String? {
        guard let value = try records(pg, where: "uuid = $1::uuid", [uuid]).first?.fields[name] else { return nil }
        if case .null = value { return nil }
        return value.stringValue ?? String(decoding: value.encoded(), as: UTF8.self)
    }

    /// How many records of `condition` have field `name` matching `test`.
    static func count(_ pg: PostgresConnection, where condition: String = "true", _ parameters: [String?] = [], field name: String = "name",
                      _ test: (String) -> Bool) throws -> Int {
        try records(pg, where: condition, parameters).filter { $0.fields[name]?.stringValue.map(test) ?? false }.count
    }

    /// How many of the records `uuids` the server holds, not deleted.
    static func held(_ pg: PostgresConnection, _ uuids: [String]) throws -> Int {
        Int(try pg.query("SELECT count(*) FROM seam.records WHERE uuid = ANY($1::uuid[]) AND NOT deleted",
                         ["{" + uuids.joined(separator: ",") + "}"]).first?[0] ?? "0") ?? 0
    }

    /// `value` sealed as a machine of `zone` seals it, for a test that writes to the server as one.
    static func sealed(_ pg: PostgresConnection, _ value: JSON, zone: String, entity: String, uuid: String, attribute: String) throws -> JSON {
        guard let key = try key(pg, zone: zone) else { return value }
        return FieldSeal(key: key, zone: zone).seal(value, entity: entity, uuid: uuid, attribute: attribute)
    }

    /// The timer model's encrypted fields (Timers v7).
    static let encrypted: [String: Set<String>] = ["Timer": ["name", "steps"], "UserGroup": ["name"]]

    /// `fields` as JSON text with the encrypted ones sealed as a machine of `zone` seals them.
    static func sealedText(_ pg: PostgresConnection, _ fields: JSONObject, zone: String, entity: String, uuid: String) throws -> String {
        var out = fields
        if let key = try key(pg, zone: zone) {
            out = FieldSeal(key: key, zone: zone).seal(fields, encrypted: encrypted[entity] ?? [], entity: entity, uuid: uuid)
        }
        return String(decoding: JSON.object(out).encoded(), as: UTF8.self)
    }

    /// Issue 35's promise, over the whole server: no timer name, step label or group name in
    /// clear — `pg_dump`'s text of every live record holds each such field sealed.
    static func assertNothingInClear(_ server: PostgresTestServer, file: StaticString = #filePath, line: UInt = #line) throws {
        let dump = try Executables.runTool("/usr/bin/pg_dump", ["--data-only", "--table=seam.records", "--column-inserts",
                                                               "-h", server.directory, "-p", String(server.port), "-U", "postgres", "seam"])
        XCTAssertEqual(dump.status, 0, dump.stderr, file: file, line: line)
        let pg = try PostgresConnection(server.adminConnection)
        var clear: [String] = []
        let skipped = lock.withLock { inClearOnPurpose }
        for row in try pg.query("SELECT record_type, uuid::text, fields::text FROM seam.records WHERE NOT deleted "
                                + "AND record_type IN ('Timer', 'UserGroup') AND octet_length(fields::text) <= \(ServerSchema.maxRecordBytes)") {
            guard !skipped.contains(row[1] ?? ""), let fields = (try? JSON.decode(row[2] ?? "{}"))?.objectValue else { continue }
            let encrypted = row[0] == "Timer" ? ["name", "steps"] : ["name"]
            for name in encrypted where fields[name] != nil && !FieldSeal.isSealed(fields[name]!) {
                clear.append("\(row[0] ?? "?") \(row[1] ?? "?").\(name) = \(String(decoding: fields[name]!.encoded(), as: UTF8.self).prefix(60))")
            }
        }
        XCTAssertEqual(clear, [String](), "fields the server holds in clear", file: file, line: line)
        // And literally, in pg_dump's text: no timer or group name and no step label written as a
        // JSON string (a sealed one is an object: `"name": {"box": …}`), but in the records a
        // test wrote in clear on purpose.
        // (Each line is `INSERT … VALUES (zone, type, uuid, 'FIELDS', tag, time, deleted, 'VERSIONS');`:
        // the versions, whose values are strings, are left out.)
        let found = dump.stdout.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("INSERT INTO seam.records"), line.contains("'Timer'") || line.contains("'UserGroup'"),
                  let versions = line.range(of: ", '{", options: .backwards) else { return nil }
            let fields = line[..<versions.lowerBound]
            guard fields.contains("\"name\": \"") || fields.contains("\"label\": \""), !skipped.contains(where: { fields.contains($0) })
            else { return nil }
            return String(fields.prefix(200))
        }
        XCTAssertEqual(found, [String](), "names in clear in pg_dump's output", file: file, line: line)
    }
}
