import SeamJSON
import SeamMetrics

/// `org.seam.Metrics.Get`'s reply as JSON, and back (PROTOCOL.md, "Metrics"):
///
///     {"families": [{"name": "seam_requests_total", "type": "counter", "help": "…",
///                    "samples": [{"labels": {"method": "org.seam.Store.Save", "outcome": "ok"}, "value": 12}]},
///                   {"name": "seam_request_seconds", "type": "histogram", "help": "…",
///                    "samples": [{"labels": {…}, "buckets": [[0.0001, 3], [0.001, 12]], "sum": 0.004, "count": 12}]}]}
///
/// A histogram's buckets are cumulative, as Prometheus counts them; `+Inf` is `count`.
public enum MetricsWire {
    public static func json(_ families: [MetricFamily]) -> JSONObject {
        ["families": .array(families.map { family in
            .object(["name": .string(family.name), "type": .string(family.kind.rawValue), "help": .string(family.help),
                     "samples": .array(family.samples.map(sample))])
        })]
    }

    static func sample(_ s: MetricSample) -> JSON {
        var o: JSONObject = ["labels": .object(JSONObject(uniqueKeysWithValues: s.labels.map { ($0.0, JSON.string($0.1)) }))]
        switch s.value {
        case .number(let v):
            o["value"] = number(v)
        case .histogram(let h):
            o["buckets"] = .array(zip(h.bounds, h.cumulative).map { .array([.double($0.0), .integer(Int64(clamping: $0.1))]) })
            o["sum"] = .double(h.sum)
            o["count"] = .integer(Int64(clamping: h.count))
        }
        return .object(o)
    }

    /// Whole numbers as integers (a counter reads as one); JSON has no infinities, so a gauge
    /// that is not finite is written as null.
    static func number(_ v: Double) -> JSON {
        guard v.isFinite else { return .null }
        if v == v.rounded(), abs(v) < 9e15 { return .integer(Int64(v)) }
        return .double(v)
    }

    /// The families of a Get reply's parameters; what is wrong says where.
    public static func families(_ parameters: JSONObject) throws(VarlinkError) -> [MetricFamily] {
        guard let items = parameters["families"]?.arrayValue else { throw .invalidParameter("families") }
        var out: [MetricFamily] = []
        for (i, item) in items.enumerated() {
            let at = "families[\(i)]"
            guard let o = item.objectValue, let name = o["name"]?.stringValue, MetricFamily.isValidName(name) else {
                throw .invalidParameter("\(at).name")
            }
            guard let kind = o["type"]?.stringValue.flatMap(MetricKind.init(rawValue:)) else { throw .invalidParameter("\(at).type") }
            guard let help = o["help"]?.stringValue else { throw .invalidParameter("\(at).help") }
            guard let samples = o["samples"]?.arrayValue else { throw .invalidParameter("\(at).samples") }
            var family = MetricFamily(name, kind, help, [])
            for (j, s) in samples.enumerated() {
                family.samples.append(try sample(s, kind: kind, at: "\(at).samples[\(j)]"))
            }
            out.append(family)
        }
        return out
    }

    static func sample(_ json: JSON, kind: MetricKind, at: String) throws(VarlinkError) -> MetricSample {
        guard let o = json.objectValue, let labelObject = o["labels"]?.objectValue else { throw .invalidParameter("\(at).labels") }
        var labels: [(String, String)] = []
        for (k, v) in labelObject {
            guard let s = v.stringValue, MetricFamily.isValidLabelName(k) else { throw .invalidParameter("\(at).labels.\(k)") }
            labels.append((k, s))
        }
        guard kind == .histogram else {
            guard let v = o["value"] else { throw .invalidParameter("\(at).value") }
            if v.isNull { return MetricSample(labels, .nan) }
            guard let d = v.doubleValue else { throw .invalidParameter("\(at).value") }
            return MetricSample(labels, d)
        }
        guard let buckets = o["buckets"]?.arrayValue, let sum = o["sum"]?.doubleValue,
              let count = o["count"]?.int64Value, count >= 0 else { throw .invalidParameter("\(at).buckets") }
        var bounds: [Double] = [], cumulative: [UInt64] = []
        for b in buckets {
            guard let pair = b.arrayValue, pair.count == 2, let bound = pair[0].doubleValue, let c = pair[1].int64Value, c >= 0 else {
                throw .invalidParameter("\(at).buckets")
            }
            bounds.append(bound)
            cumulative.append(UInt64(c))
        }
        guard let h = Histogram(bounds: bounds, cumulative: cumulative, sum: sum, count: UInt64(count)) else {
            throw .invalidParameter("\(at).buckets")
        }
        return MetricSample(labels, .histogram(h))
    }
}
