import SeamClient
import XCTest

/// A test case with a fresh seamd for each test, and clients of it.
open class BrokerTestCase: XCTestCase {
    public var broker: BrokerProcess!

    open override func setUpWithError() throws { broker = try BrokerProcess() }

    open override func tearDown() {
        broker?.stop()
        broker = nil
    }

    /// A connection that has said Hello (so it may save).
    public func client() throws -> SeamConnection {
        let c = try SeamConnection.connect(path: broker.socketPath)
        try c.hello()
        return c
    }
}
