import Foundation
import SeamSchema
import SeamTimers
import SeamTestSupport
import XCTest

/// Shipped versions are frozen: their canonical JSON and hashes are committed under
/// `Protocol/schemas/<Model>/`, and any change to either fails here.
///
/// To freeze a new version, run `SEAM_FREEZE=1 swift test --filter FrozenHistoryTests`: it
/// writes the files of versions that have none and never overwrites a file that exists.
final class FrozenHistoryTests: XCTestCase {
    static let models = [TimerModel.history, SyncMetadataModel.history]

    private func paths(_ v: ModelVersion) -> (json: String, hashes: String) {
        ("Protocol/schemas/\(v.model)/v\(v.version).json", "Protocol/schemas/\(v.model)/v\(v.version).hashes.json")
    }

    static func hashesDocument(_ v: ModelVersion) -> String {
        CanonicalJSON.object([
            "model": .string(v.model),
            "version": .integer(Int64(v.version)),
            "modelHash": .string(v.hashes.model),
            "entities": .object(v.hashes.entities.mapValues(CanonicalJSON.string)),
            "configurations": .object(v.hashes.configurations.mapValues(CanonicalJSON.string)),
        ]).text
    }

    func testEveryShippedVersionIsFrozen() throws {
        let freeze = ProcessInfo.processInfo.environment["SEAM_FREEZE"] == "1"
        for model in Self.models {
            for v in model.versions {
                let (jsonPath, hashesPath) = paths(v)
                let expectedHashes = Self.hashesDocument(v)
                if freeze, !FileManager.default.fileExists(atPath: RepositoryFiles.url(jsonPath).path) {
                    try FileManager.default.createDirectory(at: RepositoryFiles.url(jsonPath).deletingLastPathComponent(),
                                                            withIntermediateDirectories: true)
                    try v.canonicalJSON.write(to: RepositoryFiles.url(jsonPath), atomically: true, encoding: .utf8)
                    try expectedHashes.write(to: RepositoryFiles.url(hashesPath), atomically: true, encoding: .utf8)
                }
                let committed = try RepositoryFiles.text(jsonPath)
                XCTAssertEqual(v.canonicalJSON, committed,
                               "\(model.name) v\(v.version) no longer matches its frozen canonical JSON: a shipped version "
                               + "must never change; add a new version instead")
                XCTAssertEqual(expectedHashes, try RepositoryFiles.text(hashesPath), "\(model.name) v\(v.version) hashes changed")
                XCTAssertEqual(SHA256.hex(committed), v.hashes.model)
            }
            let next = "Protocol/schemas/\(model.name)/v\(model.versions.count + 1).json"
            XCTAssertFalse(FileManager.default.fileExists(atPath: RepositoryFiles.url(next).path),
                           "\(next) is frozen but the model no longer defines it: a shipped version was deleted")
        }
    }

    /// The committed version 5, read back without the Swift definitions, is the committed
    /// version 4 with `Session.note` (a string, default "") and nothing else; only the Local
    /// configuration's hash moves.
    func testFrozenVersion5IsVersion4WithTheSessionNote() throws {
        func frozen(_ label: Int) throws -> ModelVersion {
            try ModelVersion(canonicalJSON: try RepositoryFiles.text("Protocol/schemas/Timers/v\(label).json"), label: label)
        }
        let v4 = try frozen(4), v5 = try frozen(5)
        XCTAssertEqual(v5.entities.map(\.name), v4.entities.map(\.name))
        for e in v4.entities where e.name != "Session" { XCTAssertEqual(v5.entity(e.name), e, e.name) }
        let before = try XCTUnwrap(v4.entity("Session")), after = try XCTUnwrap(v5.entity("Session"))
        XCTAssertEqual(Set(after.attributes), Set(before.attributes).union([Attribute("note", .string, default: .string(""))]))
        XCTAssertEqual(after.indexes, before.indexes)
        XCTAssertEqual(after.uniqueConstraints, before.uniqueConstraints)
        XCTAssertEqual(v5.hashes.configurations["Cloud"], v4.hashes.configurations["Cloud"])
        XCTAssertNotEqual(v5.hashes.configurations["Local"], v4.hashes.configurations["Local"])
        XCTAssertEqual(v5.hashes, TimerModel.history.version(5)?.hashes)
    }

    /// The committed version 6, read back without the Swift definitions, is the committed
    /// version 5 with `Timer.sound` and `Session.sound` (strings, default "") and nothing else;
    /// both configurations' hashes move (Cloud's for the first time since version 3).
    func testFrozenVersion6IsVersion5WithTheTimerAndSessionSound() throws {
        func frozen(_ label: Int) throws -> ModelVersion {
            try ModelVersion(canonicalJSON: try RepositoryFiles.text("Protocol/schemas/Timers/v\(label).json"), label: label)
        }
        let v5 = try frozen(5), v6 = try frozen(6)
        let sound = Attribute("sound", .string, default: .string(""))
        XCTAssertEqual(v6.entities.map(\.name), v5.entities.map(\.name))
        for e in v5.entities where !["Timer", "Session"].contains(e.name) { XCTAssertEqual(v6.entity(e.name), e, e.name) }
        for name in ["Timer", "Session"] {
            let before = try XCTUnwrap(v5.entity(name)), after = try XCTUnwrap(v6.entity(name))
            XCTAssertEqual(Set(after.attributes), Set(before.attributes).union([sound]), name)
            XCTAssertEqual(v6.configuration(of: name), v5.configuration(of: name), name)
            XCTAssertEqual(after.indexes, before.indexes, name)
            XCTAssertEqual(after.uniqueConstraints, before.uniqueConstraints, name)
            XCTAssertEqual(after.links, before.links, name)
            XCTAssertNotEqual(v6.hashes.entities[name], v5.hashes.entities[name], name)
        }
        XCTAssertEqual(v6.hashes.entities["UserGroup"], v5.hashes.entities["UserGroup"])
        XCTAssertNotEqual(v6.hashes.configurations["Cloud"], v5.hashes.configurations["Cloud"])
        XCTAssertNotEqual(v6.hashes.configurations["Local"], v5.hashes.configurations["Local"])
        XCTAssertEqual(v6.hashes, TimerModel.history.version(6)?.hashes)
    }

    /// A label names one shape and a shape one label, across the whole history.
    func testLabelsAndShapesCorrespondOneToOne() {
        for model in Self.models {
            let hashes = model.versions.map(\.hashes.model)
            XCTAssertEqual(Set(hashes).count, hashes.count, model.name)
            XCTAssertEqual(model.versions.map(\.version), Array(1...model.versions.count))
        }
    }
}
