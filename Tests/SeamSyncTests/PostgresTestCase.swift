import SeamTestSupport
import XCTest

/// A test class with a PostgreSQL server of its own, started once for the class with a login
/// role (a zone) for each of `zones`; after every test, the server is checked to hold no timer
/// name, step label or group name in clear (issue 35).
class PostgresTestCase: XCTestCase {
    /// The server's zones, the first made with it: each class names its own.
    class var zones: [String] { ["alice"] }

    nonisolated(unsafe) private static var servers: [String: PostgresTestServer] = [:]

    override class func setUp() {
        super.setUp()
        do {
            let server = try PostgresTestServer(user: zones[0])
            for user in zones.dropFirst() { try server.addUser(user) }
            servers["\(self)"] = server
        } catch {
            print("\(self): no PostgreSQL: \(error)")
        }
    }

    override class func tearDown() {
        servers["\(self)"] = nil
        super.tearDown()
    }

    override func tearDownWithError() throws {
        if let server = Self.server { try ServerRecords.assertNothingInClear(server) }
        try super.tearDownWithError()
    }

    class var server: PostgresTestServer? { servers["\(self)"] }

    func pg() throws -> PostgresTestServer { try XCTUnwrap(Self.server, "PostgreSQL did not start (see the log above)") }
}
