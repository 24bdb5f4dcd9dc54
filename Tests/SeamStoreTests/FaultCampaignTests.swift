import Foundation
import SeamTestSupport
import XCTest

/// The fault campaign (`FaultCampaign`): a short one in every run of `scripts/test`, a long one
/// with `SEAM_CAMPAIGN_STEPS` and `SEAM_CAMPAIGN_SEEDS` (how many seeds, from a random start), or
/// one seed again with `SEAM_CAMPAIGN_SEED`.
final class FaultCampaignTests: XCTestCase {
    func testSeededFaultCampaignsLoseNothingAcknowledged() throws {
        let environment = ProcessInfo.processInfo.environment
        let steps = Int(environment["SEAM_CAMPAIGN_STEPS"] ?? "") ?? 30
        var seeds: [UInt64]
        if let one = environment["SEAM_CAMPAIGN_SEED"].flatMap(UInt64.init) {
            seeds = [one]
        } else {
            let count = Int(environment["SEAM_CAMPAIGN_SEEDS"] ?? "") ?? 2
            let start = UInt64.random(in: 1...UInt64(Int32.max))
            seeds = (0..<UInt64(count)).map { start + $0 }
        }
        for seed in seeds {
            print("FaultCampaign: seed \(seed), \(steps) steps (replay with SEAM_CAMPAIGN_SEED=\(seed))")
            let campaign = try FaultCampaign(seed: seed)
            try campaign.run(steps: steps)
            print("FaultCampaign: " + campaign.summary)
        }
    }
}
