import Foundation

/// Timing helpers and the table every benchmark prints.
///
/// Machines are noisy: each figure is the median of several runs, and comparisons are measured
/// side by side in the same run and reported as ratios.
enum Harness {
    /// Monotonic nanoseconds.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body` `runs` times and returns each run's seconds.
    static func time(runs: Int, _ body: () throws -> Void) rethrows -> [Double] {
        var out: [Double] = []
        for _ in 0..<runs {
            let start = now()
            try body()
            out.append(Double(now() - start) / 1e9)
        }
        return out
    }

    static func median(_ xs: [Double]) -> Double { percentile(xs, 0.5) }

    static func percentile(_ xs: [Double], _ p: Double) -> Double {
        guard !xs.isEmpty else { return .nan }
        let s = xs.sorted()
        let i = min(s.count - 1, max(0, Int((Double(s.count - 1) * p).rounded())))
        return s[i]
    }

    /// Peak resident set size of this process so far, in bytes (VmHWM).
    static func peakRSS() -> Int { memory().peak }

    /// A process's resident set size now (VmRSS) and at its peak so far (VmHWM), in bytes, from
    /// `/proc/PID/status`; this process's without `pid`, zeros when the file cannot be read.
    static func memory(of pid: Int32? = nil) -> (resident: Int, peak: Int) {
        let path = "/proc/\(pid.map(String.init) ?? "self")/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return (0, 0) }
        var resident = 0, peak = 0
        for line in text.split(separator: "\n") {
            let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            if line.hasPrefix("VmRSS:") { resident = kb * 1024 }
            if line.hasPrefix("VmHWM:") { peak = kb * 1024 }
        }
        return (resident, peak)
    }

    /// A fresh, empty directory `/tmp/seam-bench-NAME-PID` (short: socket paths live in it);
    /// remove it with `FileManager.default.removeItem` when done.
    static func scratchDirectory(_ name: String) throws -> String {
        let path = "/tmp/seam-bench-\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Formats seconds with a unit that suits their size.
    static func duration(_ s: Double) -> String {
        if s.isNaN { return "-" }
        if s < 0 { return "−" + duration(-s) }
        if s < 1e-6 { return String(format: "%.0f ns", s * 1e9) }
        if s < 1e-3 { return String(format: "%.2f µs", s * 1e6) }
        if s < 1 { return String(format: "%.2f ms", s * 1e3) }
        return String(format: "%.2f s", s)
    }

    static func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.2f×", a / b) }
}

/// A Markdown table, printed as the benchmark runs so that a long run shows progress.
struct BenchTable {
    let title: String
    let columns: [String]
    private(set) var rows: [[String]] = []

    init(_ title: String, columns: [String]) {
        self.title = title
        self.columns = columns
    }

    mutating func add(_ row: [String]) {
        rows.append(row)
    }

    func render() -> String {
        var widths = columns.map(\.count)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { i, c in c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: " | ") + " |"
        }
        var out = "\n### \(title)\n\n" + line(columns) + "\n"
        out += "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|\n"
        for r in rows { out += line(r) + "\n" }
        return out
    }

    /// Printed and flushed: a run stopped part way (into a file) keeps the tables it printed.
    func print() {
        Swift.print(render())
        fflush(nil)
    }
}
