@testable import SeamBroker
import SeamSystem
import XCTest

/// A connection's outbox, on a real socket pair: what has been written does not stay queued.
final class ConnectionOutboxTests: XCTestCase {
    /// A client that always reads a little less than it is sent never lets the outbox empty.
    /// The outbox still drops what the socket took, chunk by chunk: it holds at most what is
    /// unwritten and one chunk, instead of everything ever sent.
    func testAnOutboxThatNeverEmptiesKeepsLittleMoreThanWhatIsUnwritten() throws {
        let (broker, client) = try UnixSocket.pair()
        defer {
            UnixSocket.closeDescriptor(broker)
            UnixSocket.closeDescriptor(client)
        }
        UnixSocket.setNonBlocking(broker, true)
        UnixSocket.setNonBlocking(client, true)
        let c = Connection(fd: broker, id: 1, peer: try UnixSocket.peerCredentials(broker), now: 0)
        let frame = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
        var sent = 0, received = 0, largest = 0, overTwice = 0
        var scratch: [UInt8] = []
        for _ in 0..<500 {
            c.enqueue(frame)
            sent += frame.count
            if c.outbox.heldBytes > 2 * c.pendingOutput + Outbox.chunkBytes { overTwice += 1 }
            largest = max(largest, c.outbox.heldBytes)
            _ = try c.flush()
            scratch.removeAll(keepingCapacity: true)
            if case .bytes(let n) = try UnixSocket.read(client, into: &scratch, max: 60 * 1024) { received += n }
        }
        XCTAssertEqual(overTwice, 0, "times the outbox held more than twice what was unwritten")
        XCTAssertGreaterThan(c.pendingOutput, 1 << 20, "the backlog grew (the test is what it says)")
        XCTAssertLessThan(largest, sent / 4, "sent \(sent) bytes; the outbox held at most \(largest)")
        // Once the client reads everything, the outbox empties.
        while c.pendingOutput > 0 {
            _ = try c.flush()
            scratch.removeAll(keepingCapacity: true)
            if case .bytes(let n) = try UnixSocket.read(client, into: &scratch, max: 1 << 20) { received += n }
        }
        while case .bytes(let n) = try UnixSocket.read(client, into: &scratch, max: 1 << 20) { received += n }
        XCTAssertEqual(received, sent, "every byte arrived, in one piece")
        XCTAssertEqual(c.outbox.heldBytes, 0)
    }
}
