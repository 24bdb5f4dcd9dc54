/// The HTTP the metrics role speaks, pure: a request's head read and judged, a response written.
/// One request per connection (`Connection: close`); `GET` or `HEAD` of `/metrics` only; a `Host`
/// that names this machine's loopback only, so that a web page whose name was rebound to
/// 127.0.0.1 (DNS rebinding) cannot read the figures through a browser.
public enum ScrapeEndpoint {
    /// A request head longer than this is refused (431).
    public static let maxHeadBytes = 8_192

    public enum Answer: Equatable, Sendable {
        /// Serve the metrics (`head`: the headers alone).
        case metrics(head: Bool)
        /// A status, its reason phrase, and a line saying what to do.
        case refuse(status: Int, reason: String, message: String)
    }

    /// Where the head ends (the index past its blank line), or nil while it has not.
    public static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count where bytes[i] == 10 {
            if bytes[i - 1] == 10 { return i + 1 }  // a bare "\n\n", which some clients send
            if bytes[i - 1] == 13, bytes[i - 2] == 10 { return i + 1 }
        }
        return nil
    }

    /// What to answer a request whose head is `head` (up to its blank line), for a server on `port`.
    public static func answer(_ head: [UInt8], port: Int) -> Answer {
        guard head.count <= maxHeadBytes else {
            return .refuse(status: 431, reason: "Request Header Fields Too Large", message: "the request's head passes \(maxHeadBytes) bytes")
        }
        guard head.allSatisfy({ $0 == 9 || $0 == 10 || $0 == 13 || (0x20...0x7E).contains($0) }) else {
            return .refuse(status: 400, reason: "Bad Request", message: "the request's head is not printable ASCII")
        }
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        guard !lines.isEmpty else { return .refuse(status: 400, reason: "Bad Request", message: "an empty request") }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2] == "HTTP/1.1" || requestLine[2] == "HTTP/1.0" else {
            return .refuse(status: 400, reason: "Bad Request", message: "the request line is not METHOD PATH HTTP/1.x")
        }
        var host: String?
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                return .refuse(status: 400, reason: "Bad Request", message: "a header line without a colon")
            }
            if line[..<colon].lowercased() == "host" {
                guard host == nil else { return .refuse(status: 400, reason: "Bad Request", message: "two Host headers") }
                host = line[line.index(after: colon)...].trimmingSpaces()
            }
        }
        if requestLine[2] == "HTTP/1.1", host == nil {
            return .refuse(status: 400, reason: "Bad Request", message: "HTTP/1.1 needs a Host header")
        }
        if let host, !isLoopback(host: host, port: port) {
            return .refuse(status: 421, reason: "Misdirected Request",
                           message: "this endpoint answers requests for 127.0.0.1:\(port) or localhost:\(port), not '\(host)'")
        }
        let method = requestLine[0], target = requestLine[1]
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard path == "/metrics" else {
            return .refuse(status: 404, reason: "Not Found", message: "seam-metrics serves /metrics only")
        }
        switch method {
        case "GET": return .metrics(head: false)
        case "HEAD": return .metrics(head: true)
        default: return .refuse(status: 405, reason: "Method Not Allowed", message: "/metrics answers GET and HEAD")
        }
    }

    /// Whether a Host header names this server on the loopback: `127.0.0.1`, `localhost` or
    /// `[::1]`, with this port or none.
    static func isLoopback(host: String, port: Int) -> Bool {
        let lowered = host.lowercased()
        for name in ["127.0.0.1", "localhost", "[::1]"] {
            if lowered == name || lowered == "\(name):\(port)" { return true }
        }
        return false
    }

    /// A whole response: status line, headers, body (left out for HEAD, its length kept).
    public static func response(status: Int, reason: String, contentType: String, body: String, head: Bool = false) -> [UInt8] {
        var extra = ""
        if status == 405 { extra = "Allow: GET, HEAD\r\n" }
        let bytes = Array(body.utf8)
        let text = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(bytes.count)\r\n"
            + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\(extra)\r\n"
        return Array(text.utf8) + (head ? [] : bytes)
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
