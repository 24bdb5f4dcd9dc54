import Foundation
import SeamSchema
import SeamTestSupport
import XCTest

/// Conformance vectors for the hash algorithm: canonical JSON and expected hashes, committed
/// under `Protocol/vectors/schema/`, reproduced by `Protocol/tools/schema_hash.py` too.
///
/// `SEAM_FREEZE=1` writes vectors that do not exist yet; it never overwrites one.
final class SchemaVectorsTests: XCTestCase {
    static func vectors() throws -> [(name: String, version: ModelVersion)] {
        var minimal = ModelDraft(model: "Minimal")
        try minimal.addConfiguration("Only")
        try minimal.addEntity(Entity("Thing", attributes: [Attribute("uuid", .uuid)]), in: "Only")

        var defaults = ModelDraft(model: "Defaults")
        try defaults.addConfiguration("Cloud")
        try defaults.addEntity(Entity("Every", attributes: [
            Attribute("uuid", .uuid),
            Attribute("text", .string, default: .string("quote\" back\\ tab\t nl\n nul\u{0} del\u{7f} é 😀 /")),
            Attribute("empty", .string, default: .string("")),
            Attribute("count", .integer, default: .integer(Int64.min)),
            Attribute("big", .integer, default: .integer(Int64.max)),
            Attribute("ratio", .double, default: .double(-0.1)),
            Attribute("flag", .bool, default: .bool(false)),
            Attribute("when", .date, default: .date(1_764_460_800.25)),
            Attribute("ref", .uuid, optional: true, default: .uuid("0f8fad5b-d9cb-469f-a165-70867728950e")),
            Attribute("bytes", .binary, default: .binary([0, 255, 128, 7])),
            Attribute("doc", .json, default: .json(#" {"z": [1, 2.50, {"é": null}], "a": "\u0041"} "#)),
            Attribute("maybe", .string, optional: true),
        ]), in: "Cloud")

        var links = ModelDraft(model: "Links")
        try links.addConfiguration("Cloud")
        try links.addConfiguration("Local")
        links.versionHashModifier = "model-modifier"
        try links.addEntity(Entity("Parent", attributes: [Attribute("uuid", .uuid), Attribute("name", .string)],
                                   indexes: [Index("name", "uuid"), Index("name")], unique: [UniqueConstraint("name")],
                                   versionHashModifier: "entity-modifier"), in: "Cloud")
        try links.addEntity(Entity("Child", attributes: [
            Attribute("uuid", .uuid),
            Attribute("parentUUID", .uuid, optional: true),
            Attribute("ownerUUID", .uuid, optional: true, versionHashModifier: "attribute-modifier"),
            Attribute("siblingUUID", .uuid, optional: true),
            Attribute("cousinUUID", .uuid, optional: true),
        ], links: [
            Link("parentUUID", to: "Parent", onDelete: .cascade),
            Link("ownerUUID", to: "Parent", onDelete: .nullify),
            Link("siblingUUID", to: "Child", onDelete: .deny, kind: .relationship),
            Link("cousinUUID", to: "Child", onDelete: .none),
        ]), in: "Local")

        // The escapes `defaults` lacks (\b, \f, \r, and \u00xx with hex letters, which are
        // lowercase), and names that sort differently by bytes than without regard to case.
        var escapes = ModelDraft(model: "Escapes")
        try escapes.addConfiguration("alpha")
        try escapes.addConfiguration("Beta")
        try escapes.addEntity(Entity("apple", attributes: [
            Attribute("uuid", .uuid), Attribute("a", .string, default: .string("bs\u{8} ff\u{c} cr\r us\u{1f} esc\u{1b} soh\u{1}")),
            Attribute("B", .integer, default: .integer(0)),
        ], indexes: [Index("a"), Index("B")], unique: [UniqueConstraint("a", "B"), UniqueConstraint("B", "a")]), in: "alpha")
        try escapes.addEntity(Entity("Zed", attributes: [Attribute("uuid", .uuid)]), in: "alpha")
        try escapes.addEntity(Entity("Yak", attributes: [Attribute("uuid", .uuid)]), in: "Beta")

        // What an implementation may read differently (issue 38): keys that differ only by
        // Unicode normalisation (two keys, by their bytes), astral-plane keys (ordered by UTF-8,
        // not UTF-16), -0 and an exponent inside a json default (kept as written), empty binary,
        // an empty modifier (written), and dates at both bounds (the doubles schema.md names).
        var edges = ModelDraft(model: "Edges")
        try edges.addConfiguration("Cloud")
        try edges.addEntity(Entity("Edge", attributes: [
            Attribute("uuid", .uuid),
            Attribute("doc", .json, default: .json(#"{"e\u0301":2,"\u00e9":1,"😀":3,"｡":4,"n":[-0,1E+05,-0.0]}"#)),
            Attribute("none", .binary, default: .binary([])),
            Attribute("plain", .string, optional: true, versionHashModifier: ""),
            Attribute("first", .date, default: .date(-62_135_596_800)),
            Attribute("last", .date, default: .date(253_402_300_800)),
        ]), in: "Cloud")

        // Transformers (issue 35): one attribute of each type that may carry `encrypted`, and one
        // beside it without, so that the key's place in the sorted members is seen.
        var transformers = ModelDraft(model: "Transformers")
        try transformers.addConfiguration("Cloud")
        try transformers.addEntity(Entity("Secret", attributes: [
            Attribute("uuid", .uuid),
            Attribute("name", .string, transformer: .encrypted),
            Attribute("steps", .json, default: .json("[]"), transformer: .encrypted),
            Attribute("blob", .binary, optional: true, versionHashModifier: "m", transformer: .encrypted),
            Attribute("plain", .string, default: .string("")),
        ], indexes: [Index("name")]), in: "Cloud")

        return [("minimal", try ModelVersion(minimal)), ("defaults", try ModelVersion(defaults)), ("links", try ModelVersion(links)),
                ("escapes", try ModelVersion(escapes)), ("edges", try ModelVersion(edges)),
                ("transformers", try ModelVersion(transformers))]
    }

    static func document(_ v: ModelVersion) -> String {
        CanonicalJSON.object([
            "canonicalJSON": .string(v.canonicalJSON),
            "hashes": .object([
                "model": .string(v.hashes.model),
                "entities": .object(v.hashes.entities.mapValues(CanonicalJSON.string)),
                "configurations": .object(v.hashes.configurations.mapValues(CanonicalJSON.string)),
            ]),
        ]).text
    }

    func testVectorsMatchTheCommittedFiles() throws {
        let freeze = ProcessInfo.processInfo.environment["SEAM_FREEZE"] == "1"
        for (name, version) in try Self.vectors() {
            let path = "Protocol/vectors/schema/\(name).json"
            let url = RepositoryFiles.url(path)
            if freeze, !FileManager.default.fileExists(atPath: url.path) {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Self.document(version).write(to: url, atomically: true, encoding: .utf8)
            }
            XCTAssertEqual(try RepositoryFiles.text(path), Self.document(version), "vector \(name) changed")
        }
    }

    /// Every document of `Protocol/vectors/schema/invalid/` breaks one rule of schema.md's
    /// "Valid models" and is refused — as `schema_hash.py` refuses it — though it is canonical.
    func testEveryInvalidVectorIsRefused() throws {
        let directory = RepositoryFiles.url("Protocol/vectors/schema/invalid")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertGreaterThanOrEqual(names.count, 20, "the invalid vectors are there")
        for name in names {
            let vector = try JSONText.parse(try RepositoryFiles.text("Protocol/vectors/schema/invalid/\(name)").trimmingCharacters(in: .newlines))
            guard let text = vector["canonicalJSON"]?.stringValue, let rule = vector["rule"]?.stringValue else {
                XCTFail("\(name): no canonicalJSON or rule")
                continue
            }
            XCTAssertEqual(try JSONText.minify(text), text, "\(name) is canonical JSON, so it is refused for its rule alone")
            do {
                let version = try ModelVersion(canonicalJSON: text)
                XCTFail("\(name) (\(rule)) was accepted as \(version.model) v\(version.version)")
            } catch {}
        }
    }
}
