/// Metrics as seamd reports them (`org.seam.Metrics.Get`) and as Prometheus reads them: families
/// of samples, each a counter, a gauge or a histogram. Pure: no I/O, no clock.

/// Counts of observations at or below each bound, their sum and their number: Prometheus's
/// histogram, with the buckets fixed when it is made.
public struct Histogram: Sendable, Equatable {
    /// Upper bounds, ascending; the implicit last bucket (`+Inf`) is `count`.
    public let bounds: [Double]
    /// Observations in each bucket alone (not cumulative), one per bound.
    public private(set) var buckets: [UInt64]
    public private(set) var sum: Double = 0
    public private(set) var count: UInt64 = 0

    public init(bounds: [Double]) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "a histogram's bounds ascend")
        self.bounds = bounds
        buckets = Array(repeating: 0, count: bounds.count)
    }

    /// A histogram read back from its wire form: cumulative counts per bound, sum, count.
    public init?(bounds: [Double], cumulative: [UInt64], sum: Double, count: UInt64) {
        guard bounds.count == cumulative.count, zip(bounds, bounds.dropFirst()).allSatisfy({ $0 < $1 }),
              zip(cumulative, cumulative.dropFirst()).allSatisfy({ $0 <= $1 }), cumulative.last.map({ $0 <= count }) ?? true
        else { return nil }
        self.bounds = bounds
        var previous: UInt64 = 0
        buckets = cumulative.map { c in
            defer { previous = c }
            return c - previous
        }
        self.sum = sum
        self.count = count
    }

    /// Seconds from 50 µs to 10 s: what a call or a checkpoint takes.
    public static let seconds: [Double] = [0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05,
                                           0.1, 0.25, 0.5, 1, 2.5, 10]
    /// Counts from 1 to 100,000: rows in a commit.
    public static let sizes: [Double] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 5_000, 20_000, 100_000]

    public mutating func observe(_ value: Double) {
        // Bounds are few: a scan from the small end finds most observations in a step or two.
        var i = 0
        while i < bounds.count, value > bounds[i] { i += 1 }
        if i < bounds.count { buckets[i] += 1 }
        sum += value
        count += 1
    }

    /// Observations at or below each bound, as Prometheus's `le` buckets count them.
    public var cumulative: [UInt64] {
        var running: UInt64 = 0
        return buckets.map { b in
            running += b
            return running
        }
    }

    /// Adds another histogram's observations over the same bounds.
    public mutating func merge(_ other: Histogram) {
        precondition(bounds == other.bounds, "histograms merge over the same bounds")
        for i in buckets.indices { buckets[i] += other.buckets[i] }
        sum += other.sum
        count += other.count
    }
}

/// What a family's samples are.
public enum MetricKind: String, Sendable, CaseIterable {
    /// Only goes up (from seamd's start): requests, restarts.
    case counter
    /// Up and down: connections, bytes queued, a store's size.
    case gauge
    case histogram
}

/// One sample: its labels and a value (counters and gauges) or a histogram.
public struct MetricSample: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case number(Double)
        case histogram(Histogram)
    }

    /// Label names and values, in the order they are written.
    public var labels: [(String, String)]
    public var value: Value

    public init(_ labels: [(String, String)], _ value: Value) {
        self.labels = labels
        self.value = value
    }

    public init(_ labels: [(String, String)], _ number: Double) { self.init(labels, .number(number)) }
    /// A sample without labels.
    public init(_ value: Value) { self.init([], value) }
    public init(_ number: Double) { self.init([], .number(number)) }

    public static func == (a: MetricSample, b: MetricSample) -> Bool {
        a.value == b.value && a.labels.map(\.0) == b.labels.map(\.0) && a.labels.map(\.1) == b.labels.map(\.1)
    }
}

/// A metric's name, kind, help and samples.
public struct MetricFamily: Sendable, Equatable {
    public var name: String
    public var kind: MetricKind
    public var help: String
    public var samples: [MetricSample]

    public init(_ name: String, _ kind: MetricKind, _ help: String, _ samples: [MetricSample]) {
        self.name = name
        self.kind = kind
        self.help = help
        self.samples = samples
    }

    /// A metric name as Prometheus takes it: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(0x30...0x39).contains(first) else { return false }
        return name.utf8.allSatisfy { b in
            (0x61...0x7A).contains(b) || (0x41...0x5A).contains(b) || (0x30...0x39).contains(b) || b == 0x5F || b == 0x3A
        }
    }

    /// A label name: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved) and not `le`
    /// (a histogram's own).
    public static func isValidLabelName(_ name: String) -> Bool {
        isValidName(name) && !name.contains(":") && !name.hasPrefix("__") && name != "le"
    }
}
