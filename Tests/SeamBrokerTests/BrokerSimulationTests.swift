import Foundation
import XCTest

/// Runs `BrokerSimulation` over seeds: `SEAM_SIMULATION_SEEDS` of them (a few hundred by default)
/// of `SEAM_SIMULATION_STEPS` steps; `SEAM_SIMULATION_SEED` replays one.
final class BrokerSimulationTests: XCTestCase {
    static func number(_ name: String) -> Int? { ProcessInfo.processInfo.environment[name].flatMap { Int($0) } }

    func testSeededClientsClockJumpsAndRestartsKeepEveryInvariant() throws {
        let steps = Self.number("SEAM_SIMULATION_STEPS") ?? 120
        let seeds: [UInt64]
        if let one = Self.number("SEAM_SIMULATION_SEED") {
            seeds = [UInt64(one)]
        } else {
            let first = UInt64(Self.number("SEAM_SIMULATION_FIRST_SEED") ?? 1)
            seeds = Array(first..<(first + UInt64(Self.number("SEAM_SIMULATION_SEEDS") ?? 200)))
        }
        var totals: [String: Int] = [:]
        let started = Date()
        for seed in seeds {
            let simulation = try BrokerSimulation(seed: seed)
            let began = Date()
            defer { if ProcessInfo.processInfo.environment["SEAM_SIMULATION_VERBOSE"] != nil { print(String(format: "%.2f s ", Date().timeIntervalSince(began)) + simulation.summary) } }
            do { try simulation.run(steps: steps) } catch let failure as BrokerSimulation.Failure {
                return XCTFail(failure.description + "\n\nthe broker's log:\n" + String(simulation.broker.log.suffix(4000)))
            }
            for (k, v) in simulation.counts { totals[k, default: 0] += v }
        }
        print("simulation: \(seeds.count) seeds of \(steps) steps in \(String(format: "%.1f", Date().timeIntervalSince(started))) s: "
              + totals.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    }
}
