import Foundation
import SeamCommandLine

// seam-bench: the benchmarks behind `scripts/bench`. Each group prints a table; `seam-bench --help`.

let groups: [(name: String, run: () throws -> Void)] = [
    ("query", QueryBenchmarks.run),
    ("store", StoreBenchmarks.run),
    ("context", ContextBenchmarks.run),
    ("json", JSONBenchmarks.run),
    ("broker", BrokerBenchmarks.run),
    ("channels", ChannelBenchmarks.run),
    ("ticker", TickerBenchmarks.run),
    ("isolation", IsolationBenchmarks.run),
    ("service", ServiceBenchmarks.run),
    ("writes", WriteBenchmarks.run),
    ("migration", MigrationBenchmarks.run),
    ("sync", SyncBenchmarks.run),
    ("convergence", ConvergenceBenchmarks.run),
]

var spec = CommandSet(
    tool: "seam-bench",
    about: """
        The benchmarks behind `scripts/bench`: each group prints a table of medians, and the
        ratio to the comparison it names, measured side by side in the same run.
        """,
    root: Command("", "Seam's benchmarks, each group a table",
                  operands: [Operand("GROUP", "a group to run (default: all)", optional: true, repeats: true,
                                     complete: .words(groups.map(\.name)))],
                  options: [.flag("quick", "every group in a short form (fewer rows and rounds, the same comparisons)"),
                            .value("check", "BOUNDS", "at the end, compare each recorded figure with its bound in BOUNDS; exit 1 beyond one",
                                   complete: .file)]))
spec.version = "0.1.0"
spec.manual = Manual(headline: "the Seam store broker's benchmarks", date: "2026-12-06")

// `__NAME …`: a child process a benchmark started (a relay, a profiled client), not a person.
var wanted = Array(CommandLine.arguments.dropFirst())
var boundsFile: String?
if wanted.first?.hasPrefix("__") != true {
    let args = spec.arguments(wanted)
    wanted = args.positional
    boundsFile = args.value("check")
} else {
    wanted.removeAll { $0 == "--quick" }  // Bench.quick has read it
}
if wanted.first == "__echo", wanted.count == 2 {
    try BrokerBenchmarks.echo(wanted[1])
    exit(0)
}
if wanted.first == "__relay", wanted.count == 4 || wanted.count == 5 {
    do { try ChannelBenchmarks.relay(socket: wanted[1], log: wanted[2], synced: wanted[3] == "synced", subscriber: wanted.count == 4) } catch {
        FileHandle.standardError.write("seam-bench: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}
if wanted.first == "__profile", wanted.count >= 2, let seconds = Double(wanted[1]) {
    do { try ChannelBenchmarks.profile(seconds: seconds, synced: wanted.count > 2 && wanted[2] == "synced") } catch {
        FileHandle.standardError.write("seam-bench: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}
if wanted.first == "__migrate" {
    do { try StoreBenchmarks.child(Array(wanted.dropFirst())) } catch {
        FileHandle.standardError.write("seam-bench: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}
if let unknown = wanted.first(where: { w in !groups.contains { $0.name == w } }) {
    FileHandle.standardError.write(("seam-bench: no group \"\(unknown)\"\(Suggestions.didYouMean(unknown, among: groups.map(\.name))) "
                                    + "(groups: \(groups.map(\.name).joined(separator: ", ")))\n").data(using: .utf8)!)
    exit(2)
}
if Bench.quick { print("(quick form: fewer rows and rounds than the full benchmark; the comparisons are the same)") }
for g in groups where wanted.isEmpty || wanted.contains(g.name) {
    do { try g.run() } catch {
        FileHandle.standardError.write("seam-bench \(g.name): \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}
if let boundsFile {
    do {
        if try !BenchGuard.check(boundsFile, groups: groups.map(\.name).filter { wanted.isEmpty || wanted.contains($0) }) { exit(1) }
    } catch {
        FileHandle.standardError.write("seam-bench: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}
