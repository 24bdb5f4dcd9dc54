/// Benchmarks of the predicate language and the channel index (issue: Predicates).
enum QueryBenchmarks {
    static func run() throws {
        print("query benchmarks: not written yet")
    }
}
