import SeamJSON
import SeamSync
import SeamSyncSetup
import XCTest

/// The pure parts of sync: URLs and their refusals, the password-file line, the configuration
/// file, and the per-field merge rule.
final class SyncRulesTests: XCTestCase {
    func testURLs() throws {
        let u = try SyncURL.parse("postgresql://alice@db.example.net:6543/timers?sslmode=require")
        XCTAssertEqual([u.user, u.host, String(u.port), u.database], ["alice", "db.example.net", "6543", "timers"])
        XCTAssertEqual(try SyncURL.parse("postgres://a%40b@h/").user, "a@b")
        XCTAssertEqual(try SyncURL.parse("postgres://a@h").database, "seam")
        XCTAssertEqual(try SyncURL.parse("postgresql:///?service=home").service, "home")
        for (bad, says) in [("mysql://a@h/db", "starts with postgresql://"), ("postgresql://a:secret@h/db", "no password"),
                            ("postgresql://a@h/db?password=x", "no password"), ("postgresql://h/db", "names no user"),
                            ("postgresql://a@h:99999/db", "port"), ("postgresql://a@/db", "a user and a host")] {
            XCTAssertThrowsError(try SyncURL.parse(bad), bad) { XCTAssertTrue("\($0)".contains(says), "\(bad): \($0)") }
        }
        XCTAssertEqual(u.passwordFileLine(password: "p:w\\d"), "db.example.net:6543:timers:alice:p\\:w\\\\d\n")
    }

    /// The password file's host field is the host as libpq takes it, or libpq never finds the
    /// line: an IPv6 address without its brackets, a socket directory as its path (escaped in
    /// the URL, or given as `host=`, which wins over the one before it, as the port does).
    func testThePasswordLineOfIPv6AndSocketURLs() throws {
        let v6 = try SyncURL.parse("postgresql://alice@[2001:db8::1]:6543/seam")
        XCTAssertEqual([v6.host, String(v6.port)], ["2001:db8::1", "6543"])
        XCTAssertEqual(v6.passwordFileLine(password: "pw"), "2001\\:db8\\:\\:1:6543:seam:alice:pw\n")
        XCTAssertEqual(try SyncURL.parse("postgresql://alice@[::1]/seam").host, "::1")
        let socket = try SyncURL.parse("postgresql://alice@%2Fvar%2Frun%2Fpostgresql/seam")
        XCTAssertEqual(socket.passwordFileLine(password: "pw"), "/var/run/postgresql:5432:seam:alice:pw\n")
        let query = try SyncURL.parse("postgresql://alice@ignored:1/seam?host=/tmp/pg&port=5433")
        XCTAssertEqual(query.passwordFileLine(password: "pw"), "/tmp/pg:5433:seam:alice:pw\n")
        XCTAssertEqual(try SyncURL.parse("postgresql://alice@/seam?host=%2Ftmp").host, "/tmp")
        XCTAssertThrowsError(try SyncURL.parse("postgresql://alice@h/seam?port=0"))
    }

    func testTheConfigurationFile() throws {
        var c = SyncConfiguration(url: "postgresql://a@h/db", passwordFile: "/x/sync.pgpass")
        c.pollInterval = 2
        XCTAssertEqual(try SyncConfiguration.parse(c.encoded, path: "sync.json"), c)
        for bad in ["", "[]", #"{"passwordFile": "x"}"#, #"{"url": "postgresql://a:pw@h/db"}"#] {
            XCTAssertThrowsError(try SyncConfiguration.parse(Array(bad.utf8), path: "sync.json"), bad)
        }
    }

    /// Per field, the greater version wins, whatever order the edits arrive in; keys not
    /// edited keep the server's value; a record the server lacks takes every attribute.
    func testThePerFieldMergeIsOrderIndependent() {
        let attributes = ["uuid", "name", "colour"]
        let early = FieldVersion.stamp(time: 100, device: "aaaaaaaa")
        let late = FieldVersion.stamp(time: 200, device: "bbbbbbbb")
        XCTAssertLessThan(early, late)
        XCTAssertLessThan(FieldVersion.stamp(time: 9, device: "z"), FieldVersion.stamp(time: 10, device: "a"))
        let base = FieldVersion.merge(server: nil, row: ["name": "n0", "colour": "c0"], stamps: ["name": early, "colour": early],
                                      attributes: attributes)
        let fromA: JSONObject = ["name": "A", "colour": "c0"]
        let fromB: JSONObject = ["name": "B", "colour": "blue"]
        let aThenB = FieldVersion.merge(server: FieldVersion.merge(server: base, row: fromA, stamps: ["name": early], attributes: attributes),
                                        row: fromB, stamps: ["name": late, "colour": late], attributes: attributes)
        let bThenA = FieldVersion.merge(server: FieldVersion.merge(server: base, row: fromB, stamps: ["name": late, "colour": late], attributes: attributes),
                                        row: fromA, stamps: ["name": early], attributes: attributes)
        XCTAssertEqual(aThenB.fields, bThenA.fields)
        XCTAssertEqual(aThenB.fields["name"], "B")
        let different = FieldVersion.merge(server: base, row: ["name": "n0", "colour": "red"], stamps: ["colour": late], attributes: attributes)
        XCTAssertEqual(different.fields["name"], "n0", "a key not edited keeps the server's value")
        XCTAssertEqual(different.fields["colour"], "red")
    }

    /// An edit made after this machine held a version follows it: each key whose version seen
    /// is not older than the edit's own gets a version just after it, on this device; keys the
    /// version seen does not have, or has older, keep the edit's; and stamps round-trip.
    func testAnEditFollowsTheVersionsItWasMadeAfter() {
        let ahead = FieldVersion.stamp(time: 5000, device: "ffffffff")
        let older = FieldVersion.stamp(time: 10, device: "ffffffff")
        let mine = FieldVersion.stamp(time: 100, device: "aaaaaaaa")
        let seen: JSONObject = ["name": .string(ahead), "colour": .string(older), "icon": .string(mine), "bad": "x"]
        let out = FieldVersion.following(seen, stamps: ["name": mine, "colour": mine, "icon": mine, "bad": mine, "sound": mine],
                                         device: "aaaaaaaa")
        XCTAssertEqual(out["name"], FieldVersion.stamp(micros: 5_000_000_001, device: "aaaaaaaa"))
        XCTAssertGreaterThan(out["name"]!, ahead)
        XCTAssertEqual(out["colour"], mine, "a version seen that is older changes nothing")
        XCTAssertGreaterThan(out["icon"]!, mine, "an equal version is passed too: it is the one replaced")
        XCTAssertEqual(out["bad"], mine, "text that is no version changes nothing")
        XCTAssertEqual(out["sound"], mine)
        XCTAssertEqual(FieldVersion.micros(of: FieldVersion.stamp(micros: 1234, device: "d")), 1234)
        XCTAssertEqual(FieldVersion.micros(of: FieldVersion.stamp(time: 1.5, device: "d")), 1_500_000)
        XCTAssertNil(FieldVersion.micros(of: "nodot"))
        XCTAssertNil(FieldVersion.micros(of: ".d"))
        XCTAssertNil(FieldVersion.micros(of: "12a4.d"))
        XCTAssertNil(FieldVersion.micros(of: "99999999999999999999.d"), "past 64 bits")
        XCTAssertEqual(FieldVersion.micros(of: "00000000000000000042.dev.ice"), 42)
        XCTAssertEqual(FieldVersion.micros(of: "-7.d"), -7)
        XCTAssertEqual(FieldVersion.stamp(time: -3, device: "d"), FieldVersion.stamp(micros: 0, device: "d"))
        XCTAssertEqual(FieldVersion.stamp(time: .infinity, device: "d"), FieldVersion.stamp(micros: 0, device: "d"))

        // Versions no stamp can follow (written by another client): the edit keeps its own.
        let last = "\(Int64.max).zzzzzzzz", short = "5.zzzzzzzz"
        let kept = FieldVersion.following(["a": .string(last), "b": .string(short)], stamps: ["a": mine, "b": mine], device: "aaaaaaaa")
        XCTAssertEqual(kept, ["a": mine, "b": mine])
        // Only this device's own versions, when asked.
        let own = FieldVersion.stamp(time: 5000, device: "aaaaaaaa")
        let onlyOwn = FieldVersion.following(["name": .string(ahead), "icon": .string(own)], stamps: ["name": mine, "icon": mine],
                                             device: "aaaaaaaa", onlyOwn: true)
        XCTAssertEqual(onlyOwn["name"], mine)
        XCTAssertGreaterThan(onlyOwn["icon"]!, own)
    }
}
