import Foundation
import Synchronization

/// The short form of every group, and the figures the guard checks (`scripts/bench --quick`).
///
/// Each group records its headline figures by name — ratios against what it is compared with in
/// the same run, and the figures its targets name — whether quick or not. With `--check FILE`,
/// the run ends by comparing every recorded figure with its bound in FILE
/// (`scripts/bench-bounds.json`), which says, for each, the target and a bound with at least
/// three times the target's room, so that noise does not fail it and a real regression does.
enum Bench {
    /// Whether the groups run in their short form: fewer rows and rounds, the same comparisons.
    static let quick = CommandLine.arguments.contains("--quick")

    /// `full`, or `short` in the quick form.
    static func size<T>(_ full: T, quick short: T) -> T { quick ? short : full }
}

enum Figures {
    private static let recorded = Mutex<[String: Double]>([:])

    /// Records a figure for the guard: seconds for times, bytes for memory, plain numbers for
    /// ratios and rates. A NaN (a comparison that could not run) fails its bound.
    static func record(_ name: String, _ value: Double) {
        recorded.withLock { $0[name] = value }
    }

    static var all: [String: Double] { recorded.withLock { $0 } }
}

/// What `scripts/bench-bounds.json` holds for one figure.
struct FigureBound {
    var name: String
    var target: String
    var unit: String
    var max: Double?
    var min: Double?

    func allows(_ value: Double) -> Bool {
        guard !value.isNaN else { return false }
        if let max, value > max { return false }
        if let min, value < min { return false }
        return true
    }

    func format(_ value: Double) -> String {
        switch unit {
        case "seconds": Harness.duration(value)
        case "bytes": String(format: "%.1f MB", value / 1_048_576)
        case "ratio": String(format: "%.2f×", value)
        default: String(format: "%.0f %@", value, unit)
        }
    }

    var boundText: String {
        [max.map { "≤ " + format($0) }, min.map { "≥ " + format($0) }].compactMap { $0 }.joined(separator: ", ")
    }
}

enum BenchGuard {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func load(_ path: String) throws -> [FigureBound] {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure(description: "cannot read \(path)") }
        guard let top = try JSONSerialization.jsonObject(with: data) as? [String: Any], let figures = top["figures"] as? [[String: Any]] else {
            throw Failure(description: "\(path): expected an object with a \"figures\" array")
        }
        return try figures.map { f in
            guard let name = f["figure"] as? String, let target = f["target"] as? String, let unit = f["unit"] as? String else {
                throw Failure(description: "\(path): every figure needs \"figure\", \"target\" and \"unit\": \(f)")
            }
            let bound = FigureBound(name: name, target: target, unit: unit, max: (f["max"] as? NSNumber)?.doubleValue,
                                    min: (f["min"] as? NSNumber)?.doubleValue)
            guard bound.max != nil || bound.min != nil else { throw Failure(description: "\(path): \(name) has no \"max\" or \"min\"") }
            return bound
        }
    }

    /// Compares every recorded figure with its bound and prints the table; false when any figure
    /// is beyond its bound, was not measured, or has no bound. Only the figures of `groups` (by
    /// their names' first part, `ticker.…`) are expected.
    static func check(_ path: String, groups: [String]) throws -> Bool {
        let bounds = try load(path).filter { b in groups.contains { b.name.hasPrefix($0 + ".") } }
        let recorded = Figures.all
        var table = BenchTable("The guard: every figure beside its bound (\(path))", columns: ["figure", "target", "bound", "measured", ""])
        var failures = 0
        for b in bounds {
            guard let value = recorded[b.name] else {
                table.add([b.name, b.target, b.boundText, "not measured", "FAIL"])
                failures += 1
                continue
            }
            let ok = b.allows(value)
            if !ok { failures += 1 }
            table.add([b.name, b.target, b.boundText, b.format(value), ok ? "ok" : "FAIL"])
        }
        for name in recorded.keys.sorted() where !bounds.contains(where: { $0.name == name }) {
            table.add([name, "-", "none in \(path)", String(recorded[name] ?? .nan), "FAIL"])
            failures += 1
        }
        table.print()
        print(failures == 0 ? "guard: all \(bounds.count) figures within their bounds"
                            : "guard: \(failures) of \(bounds.count) figures beyond their bounds, not measured, or without a bound")
        return failures == 0
    }
}
