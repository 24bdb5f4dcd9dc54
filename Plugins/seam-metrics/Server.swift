import SeamClient
import SeamMetrics
import SeamProtocol
import SeamSystem

/// Serves seamd's metrics as Prometheus's text on 127.0.0.1: one request per connection, one
/// connection at a time (a scraper asks every few seconds). What a request may cost is bounded:
/// its head must arrive within `requestSeconds` and fit `ScrapeEndpoint.maxHeadBytes`, its
/// response be taken within as long, so a client that connects and sends nothing (or reads
/// nothing) holds the endpoint for seconds at most, and seamd never.
final class MetricsServer {
    let listener: Int32
    let port: Int
    let broker: SeamConnection
    let log: (String) -> Void
    var requestSeconds = 5.0

    init(port: Int, broker: SeamConnection, log: @escaping (String) -> Void) throws(SystemError) {
        listener = try LoopbackSocket.listen(port: port)
        self.port = try LoopbackSocket.port(of: listener)
        self.broker = broker
        self.log = log
    }

    func run() -> Never {
        while true {
            _ = UnixSocket.waitReadable(listener, timeoutMilliseconds: -1)
            while let fd = try? UnixSocket.accept(listener) {
                serve(fd)
                UnixSocket.closeDescriptor(fd)
            }
        }
    }

    private func serve(_ fd: Int32) {
        let deadline = WallClock.monotonic() + requestSeconds
        var bytes: [UInt8] = []
        var end: Int?
        while end == nil, bytes.count <= ScrapeEndpoint.maxHeadBytes {
            let left = deadline - WallClock.monotonic()
            guard left > 0, UnixSocket.waitReadable(fd, timeoutMilliseconds: Int32(left * 1000) + 1) else { return }
            switch (try? UnixSocket.read(fd, into: &bytes, max: 4096)) ?? .closed {
            case .closed: return
            case .wouldBlock: continue
            case .bytes: end = ScrapeEndpoint.headEnd(bytes)
            }
        }
        let head = Array(bytes.prefix(end ?? bytes.count))
        let response: [UInt8]
        switch ScrapeEndpoint.answer(end == nil ? bytes : head, port: port) {
        case .refuse(let status, let reason, let message):
            response = ScrapeEndpoint.response(status: status, reason: reason, contentType: "text/plain; charset=utf-8", body: message + "\n")
        case .metrics(let headOnly):
            do {
                let families = try MetricsWire.families(try broker.call("org.seam.Metrics.Get"))
                response = ScrapeEndpoint.response(status: 200, reason: "OK", contentType: PrometheusText.contentType,
                                                   body: PrometheusText.render(families), head: headOnly)
            } catch {
                log("cannot read seamd's metrics: \(error)")
                response = ScrapeEndpoint.response(status: 503, reason: "Service Unavailable", contentType: "text/plain; charset=utf-8",
                                                   body: "seamd did not answer: \(error)\n")
            }
        }
        var sent = 0
        while sent < response.count {
            let left = deadline - WallClock.monotonic()
            guard left > 0 else { return }
            UnixSocket.waitWritable([fd], timeoutMilliseconds: Int32(left * 1000) + 1)
            guard let n = try? UnixSocket.write(fd, response, from: sent) else { return }
            sent += n
        }
    }
}
