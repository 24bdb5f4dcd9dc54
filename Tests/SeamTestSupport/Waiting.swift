import Foundation
import XCTest

extension XCTestCase {
    /// Polls `condition` every 20 ms until it holds; fails the test, naming `what`, when
    /// `seconds` pass first.
    public func eventually(_ seconds: Double, _ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !condition() {
            if Date() > deadline { return XCTFail("not within \(seconds) s: \(what)") }
            usleep(20_000)
        }
    }
}

/// Polls `condition` every 20 ms until it holds; throws, naming `what`, when `seconds` pass
/// first (for helpers outside a test case: the test fails with the error).
public func waitUntil(_ seconds: Double, _ what: String, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while try !condition() {
        if Date() > deadline { throw WaitTimedOut(description: "not within \(seconds) s: \(what)") }
        usleep(20_000)
    }
}

/// What `waitUntil` throws.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public var description: String
}

extension BrokerProcess {
    /// A seamd that runs the roles `config` (the text of a seamd.json, written into `directory`)
    /// lists; without `config`, the defaults: the ticker.
    public static func supervising(config: String? = nil, in directory: TemporaryDirectory) throws -> BrokerProcess {
        let path = directory.file("seamd.json")
        if let config { try Data(config.utf8).write(to: URL(fileURLWithPath: path)) }
        return try BrokerProcess(arguments: ["--config", path])
    }
}

/// A value threads share, behind a lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    public var value: Value { lock.withLock { stored } }

    public func mutate(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}
