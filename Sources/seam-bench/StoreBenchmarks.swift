/// Benchmarks of store migration (issue: Store files that migrate safely).
enum StoreBenchmarks {
    static func run() throws {
        print("store benchmarks: not written yet")
    }
}
