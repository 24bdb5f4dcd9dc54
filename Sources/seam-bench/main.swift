import Foundation

// seam-bench: the benchmarks behind `scripts/bench`. Each group prints a table.
//
//   seam-bench [--quick] [--check BOUNDS] [GROUP …]
//       groups: query, store, context, json, broker, channels, ticker, isolation, service, writes, migration, sync, convergence (default: all)
//       --quick         every group in a short form (fewer rows and rounds, the same comparisons)
//       --check BOUNDS  at the end, compare each recorded figure with its bound in BOUNDS; exit 1 beyond one

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

var wanted = Array(CommandLine.arguments.dropFirst())
var boundsFile: String?
wanted.removeAll { $0 == "--quick" }
if let i = wanted.firstIndex(of: "--check") {
    guard i + 1 < wanted.count else {
        FileHandle.standardError.write("seam-bench: --check needs a file of bounds\n".data(using: .utf8)!)
        exit(2)
    }
    boundsFile = wanted[i + 1]
    wanted.removeSubrange(i...(i + 1))
}
if wanted.first == "__echo", wanted.count == 2 {
    try BrokerBenchmarks.echo(wanted[1])
    exit(0)
}
if wanted.first == "__relay", wanted.count == 4 {
    do { try ChannelBenchmarks.relay(socket: wanted[1], log: wanted[2], synced: wanted[3] == "synced") } catch {
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
if wanted.contains("--help") || wanted.contains("-h") {
    print("usage: seam-bench [--quick] [--check BOUNDS] [\(groups.map(\.name).joined(separator: "|"))] …")
    exit(0)
}
if let unknown = wanted.first(where: { w in !groups.contains { $0.name == w } }) {
    FileHandle.standardError.write("seam-bench: no group \"\(unknown)\" (groups: \(groups.map(\.name).joined(separator: ", ")))\n".data(using: .utf8)!)
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
