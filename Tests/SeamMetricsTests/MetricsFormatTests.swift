import Foundation
import SeamJSON
import SeamMetrics
import SeamProtocol
import XCTest

/// The pure parts of the metrics: histograms, Prometheus's text, the wire form, the scrape
/// endpoint's judgement of a request, and a reply frame's error read without decoding it.
final class MetricsFormatTests: XCTestCase {
    func testAHistogramCountsEachObservationInTheFirstBucketThatHoldsIt() {
        var h = Histogram(bounds: [1, 2, 5])
        for v in [0.5, 1, 1.5, 4, 9, 2] { h.observe(v) }
        XCTAssertEqual(h.buckets, [2, 2, 1])
        XCTAssertEqual(h.cumulative, [2, 4, 5])
        XCTAssertEqual(h.count, 6, "the observation past every bound is in +Inf alone")
        XCTAssertEqual(h.sum, 18)
        var other = Histogram(bounds: [1, 2, 5])
        other.observe(3)
        h.merge(other)
        XCTAssertEqual(h.cumulative, [2, 4, 6])
        XCTAssertNil(Histogram(bounds: [1, 2], cumulative: [3, 2], sum: 0, count: 3), "cumulative counts never go down")
        XCTAssertNil(Histogram(bounds: [1, 2], cumulative: [1, 2], sum: 0, count: 1), "no bucket holds more than count")
        XCTAssertNil(Histogram(bounds: [2, 1], cumulative: [0, 0], sum: 0, count: 0), "bounds ascend")
    }

    func testTheTextFormatEscapesHelpAndLabelsAndWritesHistogramsAsBuckets() {
        var h = Histogram(bounds: [0.001, 0.5])
        h.observe(0.0002)
        h.observe(3)
        let text = PrometheusText.render([
            MetricFamily("a_total", .counter, "with a \\ and a\nline", [MetricSample([("m", "q\"u\\o\nte")], 3)]),
            MetricFamily("b", .gauge, "plain", [MetricSample(.infinity), MetricSample([("x", "y")], 0.25)]),
            MetricFamily("c_seconds", .histogram, "h", [MetricSample([("s", "Cloud")], .histogram(h))]),
            MetricFamily("9bad", .gauge, "left out", [MetricSample(1)]),
            MetricFamily("d", .gauge, "a sample with a bad label is left out", [MetricSample([("le", "1")], 1), MetricSample(2)]),
        ])
        XCTAssertEqual(text, """
            # HELP a_total with a \\\\ and a\\nline
            # TYPE a_total counter
            a_total{m="q\\"u\\\\o\\nte"} 3
            # HELP b plain
            # TYPE b gauge
            b +Inf
            b{x="y"} 0.25
            # HELP c_seconds h
            # TYPE c_seconds histogram
            c_seconds_bucket{s="Cloud",le="0.001"} 1
            c_seconds_bucket{s="Cloud",le="0.5"} 1
            c_seconds_bucket{s="Cloud",le="+Inf"} 2
            c_seconds_sum{s="Cloud"} 3.0002
            c_seconds_count{s="Cloud"} 2
            # HELP d a sample with a bad label is left out
            # TYPE d gauge
            d 2

            """)
    }

    func testTheWireFormRoundTripsAndRefusesWhatIsMalformed() throws {
        var h = Histogram(bounds: Histogram.seconds)
        for i in 0..<100 { h.observe(Double(i) / 1000) }
        let families = [
            MetricFamily("seam_requests_total", .counter, "calls", [MetricSample([("method", "org.seam.Store.Save"), ("outcome", "ok")], 12)]),
            MetricFamily("seam_request_seconds", .histogram, "time", [MetricSample([("method", "x")], .histogram(h))]),
            MetricFamily("seam_uptime_seconds", .gauge, "up", [MetricSample(1.5)]),
        ]
        let json = MetricsWire.json(families)
        // Through bytes, as a client gets it.
        let decoded = try XCTUnwrap(try JSON.decode(JSON.object(json).encoded()).objectValue)
        XCTAssertEqual(try MetricsWire.families(decoded), families)
        for bad in [#"{"families": 3}"#, #"{"families": [{"name": "a b", "type": "gauge", "help": "", "samples": []}]}"#,
                    #"{"families": [{"name": "a", "type": "summary", "help": "", "samples": []}]}"#,
                    #"{"families": [{"name": "a", "type": "gauge", "help": "", "samples": [{"labels": {"le": "1"}, "value": 1}]}]}"#,
                    #"{"families": [{"name": "a", "type": "histogram", "help": "", "samples": [{"labels": {}, "buckets": [[1, 5], [2, 3]], "sum": 0, "count": 5}]}]}"#,
                    #"{"families": [{"name": "a", "type": "counter", "help": "", "samples": [{"labels": {}, "value": "1"}]}]}"#] {
            let o = try XCTUnwrap(try JSON.decode(bad).objectValue)
            XCTAssertThrowsError(try MetricsWire.families(o), bad)
        }
    }

    func testAReplyFramesErrorIsReadWithoutDecodingIt() {
        let id: JSON = .string("a\"}b")
        let ok = Reply(parameters: ["error": .string("x"), "rows": .array([.object(["error": .string("y")])])], id: id).frame()
        XCTAssertNil(Reply.errorName(inFrame: ok), "an \"error\" inside the parameters is not the reply's")
        let failed = Reply(.invalidParameter("entity"), id: id).frame()
        XCTAssertEqual(Reply.errorName(inFrame: failed), "org.varlink.service.InvalidParameter")
        let streamed = Reply.frame(id: .integer(3)) { w in
            w.key("note")
            w.value(.string("},\"error\":\"fake\""))
        }
        XCTAssertNil(Reply.errorName(inFrame: streamed))
        XCTAssertNil(Reply.errorName(inFrame: []))
        XCTAssertNil(Reply.errorName(inFrame: Array("{\"parameters\":{".utf8)), "a truncated frame reads as no error")
    }

    func testTheEndpointServesGetAndHeadOfMetricsToTheLoopbackAlone() {
        func answer(_ text: String) -> ScrapeEndpoint.Answer { ScrapeEndpoint.answer(Array(text.utf8), port: 9464) }
        XCTAssertEqual(answer("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nAccept: */*\r\n\r\n"), .metrics(head: false))
        XCTAssertEqual(answer("HEAD /metrics?x=1 HTTP/1.1\r\nhost: localhost:9464\r\n\r\n"), .metrics(head: true))
        XCTAssertEqual(answer("GET /metrics HTTP/1.0\r\n\r\n"), .metrics(head: false), "HTTP/1.0 may leave Host out")
        func status(_ text: String) -> Int? {
            if case .refuse(let s, _, _) = answer(text) { return s }
            return nil
        }
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\nHost: attacker.example:9464\r\n\r\n"), 421, "DNS rebinding")
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n"), 421)
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\n\r\n"), 400, "HTTP/1.1 without Host")
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil\r\n\r\n"), 400)
        XCTAssertEqual(status("POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 405)
        XCTAssertEqual(status("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 404)
        XCTAssertEqual(status("GET /metrics HTTP/2\r\n\r\n"), 400)
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n"), 400)
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \u{7}\r\n\r\n"), 400)
        XCTAssertEqual(status("GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: 9_000) + "\r\n\r\n"), 431)
        let refused = ScrapeEndpoint.response(status: 405, reason: "Method Not Allowed", contentType: "text/plain", body: "no\n")
        XCTAssertTrue(String(decoding: refused, as: UTF8.self).contains("Allow: GET, HEAD\r\n"))
        let head = ScrapeEndpoint.response(status: 200, reason: "OK", contentType: "text/plain", body: "abc", head: true)
        XCTAssertTrue(String(decoding: head, as: UTF8.self).hasSuffix("Content-Length: 3\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"))
    }

    /// Seeded hostile heads: random bytes, and real requests cut, spliced and bit-flipped. The
    /// endpoint never serves one that is not GET or HEAD of /metrics for the loopback, and never traps.
    func testSeededHostileRequestHeadsAreRefusedOrServedRightly() {
        let seed = ProcessInfo.processInfo.environment["SEAM_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("MetricsFormatTests: seed \(seed) (SEAM_TEST_SEED replays it)")
        var random = Seeded(state: seed)
        let good = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2\r\n\r\n".utf8)
        let iterations = ProcessInfo.processInfo.environment["SEAM_FUZZ_ITERATIONS"].flatMap(Int.init).map { max(1, $0 / 10) } ?? 2_000
        for _ in 0..<iterations {
            var head = good
            switch random.next(upTo: 4) {
            case 0: head = (0..<random.next(upTo: 200)).map { _ in UInt8(random.next(upTo: 256)) }
            case 1: head = Array(head.prefix(random.next(upTo: head.count)))
            case 2:
                for _ in 0...random.next(upTo: 4) { head[random.next(upTo: head.count)] ^= UInt8(1 << random.next(upTo: 8)) }
            default:
                let at = random.next(upTo: head.count)
                head.insert(contentsOf: Array("Host: evil\r\n".utf8).prefix(random.next(upTo: 13)), at: at)
            }
            _ = ScrapeEndpoint.headEnd(head)
            if case .metrics = ScrapeEndpoint.answer(head, port: 9464) {
                let text = String(decoding: head, as: UTF8.self)
                XCTAssertTrue(text.hasPrefix("GET /metrics") || text.hasPrefix("HEAD /metrics"), text)
                let lines = text.unicodeScalars.split(separator: "\n").map { String(String.UnicodeScalarView($0)).lowercased() }
                let hosts = lines.filter { $0.hasPrefix("host:") }.map { $0.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines) }
                XCTAssertTrue(hosts.allSatisfy { ["127.0.0.1:9464", "localhost:9464", "127.0.0.1", "localhost"].contains($0) }, "\(hosts)")
            }
        }
    }
}

/// A seeded generator (SplitMix64's steps), so that a failing seed replays.
private struct Seeded {
    var state: UInt64
    mutating func next(upTo n: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(1, n)))
    }
}
