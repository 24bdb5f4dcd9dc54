import Foundation

// seam-bench: the benchmarks behind `scripts/bench`. Each group prints a table.
//
//   seam-bench [GROUP …]      groups: query, store, context, json, broker, channels, ticker, service, migration, sync, convergence (default: all)

let groups: [(name: String, run: () throws -> Void)] = [
    ("query", QueryBenchmarks.run),
    ("store", StoreBenchmarks.run),
    ("context", ContextBenchmarks.run),
    ("json", JSONBenchmarks.run),
    ("broker", BrokerBenchmarks.run),
    ("channels", ChannelBenchmarks.run),
    ("ticker", TickerBenchmarks.run),
    ("service", ServiceBenchmarks.run),
    ("migration", MigrationBenchmarks.run),
    ("sync", SyncBenchmarks.run),
    ("convergence", ConvergenceBenchmarks.run),
]

let wanted = Array(CommandLine.arguments.dropFirst())
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
    print("usage: seam-bench [\(groups.map(\.name).joined(separator: "|"))] …")
    exit(0)
}
for g in groups where wanted.isEmpty || wanted.contains(g.name) {
    do { try g.run() } catch {
        FileHandle.standardError.write("seam-bench \(g.name): \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}
