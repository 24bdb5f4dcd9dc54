import Foundation
import SeamSchema
import SeamStore
import SeamTestSupport
import XCTest

/// The inference rules on small models: renames, ambiguity, moves between files, embedded
/// models, type changes.
final class InferredMigrationTests: StoreTestCase {
    /// `Notes` v1: Note(uuid, body: string, pages: integer) in Cloud, Draft(uuid, text) in Local.
    func v1() throws -> ModelDraft {
        var m = ModelDraft(model: "Notes")
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(Entity("Note", attributes: [Attribute("uuid", .uuid), Attribute("body", .string),
                                                     Attribute("pages", .integer, optional: true)]), in: "Cloud")
        try m.addEntity(Entity("Draft", attributes: [Attribute("uuid", .uuid), Attribute("text", .string)]), in: "Local")
        return m
    }

    /// Writes `rows` rows at version 1 of `history` into a new directory.
    func store(_ history: VersionedModel, rows: Int = 20) throws -> String {
        let dir = temp.file("notes-\(UUID().uuidString.prefix(6))")
        try FixtureWriter(schema: try Schema([history]), versions: [history.name: 1], rowsPerEntity: rows).write(to: dir)
        return dir
    }

    func testAVanishedAttributeBesideANewOneOfTheSameTypeIsRefused() throws {
        // v2 rebuilds Note by hand: `body` is gone and `text` appears; nothing says whether it is a rename.
        var v2 = try v1().next()
        try v2.removeEntity("Note")
        try v2.addEntity(Entity("Note", attributes: [Attribute("uuid", .uuid), Attribute("text", .string, default: .string("")),
                                                     Attribute("pages", .integer, optional: true)]), in: "Cloud")
        let history = try VersionedModel([try v1(), v2])
        let dir = try store(history)
        let before = try bytes(dir + "/Cloud.sqlite")
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: try Schema([history])).migrate()) { error in
            guard case .ambiguous(let model, let entity, let removed, let added)? = (error as? StoreError)?.kind else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual([model, entity, removed, added], ["Notes", "Note", "body", "text"])
            XCTAssertTrue("\(error)".contains("declare a rename"), "\(error)")
        }
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), before)
        XCTAssertEqual(try leftovers(dir), [])
    }

    func testADeclaredRenameCarriesValuesAndADeclaredRemovalIsNotAmbiguous() throws {
        var v2 = try v1().next()
        try v2.modify("Note") { e throws(SchemaError) in
            try e.rename("body", to: "text")
            try e.remove("pages")
            try e.add(Attribute("words", .integer, default: .integer(0)))
        }
        var v3 = v2.next()
        try v3.modify("Note") { e throws(SchemaError) in try e.rename("text", to: "content") }
        let history = try VersionedModel([try v1(), v2, v3])
        let dir = try store(history)
        let bodies = try dump(dir + "/Cloud.sqlite", "Note", columns: ["uuid", "body"])
        _ = try StoreDirectory(path: dir, schema: try Schema([history])).migrate()
        XCTAssertEqual(try dump(dir + "/Cloud.sqlite", "Note", columns: ["uuid", "content"]), bodies,
                       "renamed twice, across two versions, values kept")
        XCTAssertEqual(try open(dir + "/Cloud.sqlite").scalar("SELECT count(*) FROM Note WHERE words = 0"), .integer(20))
    }

    /// v2 adds `tone` = "soft" and an optional `mood`; v3 makes "loud" the default for new notes
    /// and `mood` required, "calm"; v4 changes that default to "grim". A v1 store migrated in
    /// one step holds what three steps would have given it: soft and calm.
    func testAnAttributeAddedOnTheWayGetsTheDefaultOfTheVersionThatAddedIt() throws {
        var v2 = try v1().next()
        try v2.modify("Note") { e throws(SchemaError) in
            try e.add(Attribute("tone", .string, default: .string("soft")))
            try e.add(Attribute("mood", .string, optional: true))
        }
        var v3 = v2.next()
        try v3.modify("Note") { e throws(SchemaError) in
            try e.setDefault("tone", .string("loud"))
            try e.setOptional("mood", false, default: .string("calm"))
        }
        var v4 = v3.next()
        try v4.modify("Note") { e throws(SchemaError) in try e.setDefault("mood", .string("grim")) }
        // ALTER TABLE … ADD COLUMN would give the rows today's defaults, so both take the copy.
        for (label, versions) in [("to v3", [try v1(), v2, v3]), ("to v4", [try v1(), v2, v3, v4])] {
            let history = try VersionedModel(versions)
            let dir = try store(history)
            let report = try StoreDirectory(path: dir, schema: try Schema([history])).migrate()
            let db = try open(dir + "/Cloud.sqlite")
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM Note WHERE tone = 'soft' AND mood = 'calm'"), .integer(20),
                           "\(label): \(report)")
        }
    }

    /// v2 makes `pages` required with 1 for nil; v3 then makes 9 the default, or `pages` optional
    /// again. A v1 nil migrated in one step is what two steps give it: 1, in both cases (it was
    /// today's default, 9, or left nil).
    func testANilFilledOnTheWayGetsTheDefaultOfTheVersionThatMadeItRequired() throws {
        var v2 = try v1().next()
        try v2.modify("Note") { e throws(SchemaError) in try e.setOptional("pages", false, default: .integer(1)) }
        var newDefault = v2.next()
        try newDefault.modify("Note") { e throws(SchemaError) in try e.setDefault("pages", .integer(9)) }
        var optionalAgain = v2.next()
        try optionalAgain.modify("Note") { e throws(SchemaError) in try e.setOptional("pages", true) }
        for (label, v3) in [("a new default", newDefault), ("optional again", optionalAgain)] {
            let history = try VersionedModel([try v1(), v2, v3])
            let dir = try store(history)
            try Database(path: dir + "/Cloud.sqlite").execute("UPDATE Note SET pages = NULL")
            let nils = try open(dir + "/Cloud.sqlite").scalar("SELECT count(*) FROM Note WHERE pages IS NULL")
            XCTAssertEqual(nils, .integer(20), label)
            let report = try StoreDirectory(path: dir, schema: try Schema([history])).migrate()
            XCTAssertEqual(try open(dir + "/Cloud.sqlite").scalar("SELECT count(*) FROM Note WHERE pages = 1"), .integer(20),
                           "\(label): \(report)")
        }
    }

    func testAnEntityMovedBetweenFilesMovesItsRowsAndBothFilesSwapTogether() throws {
        var v2 = try v1().next()
        try v2.moveEntity("Draft", to: "Cloud")
        let history = try VersionedModel([try v1(), v2])
        let dir = try store(history)
        let drafts = try dump(dir + "/Local.sqlite", "Draft")
        let report = try StoreDirectory(path: dir, schema: try Schema([history])).migrate()
        XCTAssertEqual(report.configurations.sorted(), ["Cloud", "Local"])
        XCTAssertEqual(try dump(dir + "/Cloud.sqlite", "Draft"), drafts)
        XCTAssertEqual(try open(dir + "/Local.sqlite").scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'Draft'"), .integer(0))
        XCTAssertTrue(FileManager.default.fileExists(atPath: newestBackup(in: dir, of: "Local")))
        XCTAssertTrue(FileManager.default.fileExists(atPath: newestBackup(in: dir, of: "Cloud")))
    }

    /// A Swift stage sees the old row under the store's names and typed values, and its output is
    /// checked against the target types.
    func testASwiftStageRunsOnTypedSnapshots() throws {
        var v2 = try v1().next()
        try v2.modify("Note") { e throws(SchemaError) in
            try e.rename("body", to: "text")
            try e.add(Attribute("summary", .string, default: .string("")))
        }
        try v2.addStage(CustomStage("summarise", entity: "Note") { old, new in
            guard case .string(let body) = old["body"] else { throw CustomStageError(stage: "summarise", message: "no body") }
            let pages = old["pages"].integerValue.map(String.init) ?? "?"
            new["summary"] = .string("\(body.prefix(3))/\(pages)")
        })
        try v2.addStage(CustomStage("shout", entity: "Note", sql: ["text": "upper(\"text\")"]))
        let history = try VersionedModel([try v1(), v2])
        let dir = try store(history, rows: 30)
        let rows = try open(dir + "/Cloud.sqlite").rows("SELECT uuid, body, pages FROM Note ORDER BY uuid")
        var options = MigrationOptions()
        options.batchSize = 7
        _ = try StoreDirectory(path: dir, schema: try Schema([history])).migrate(options: options)
        let after = try open(dir + "/Cloud.sqlite").rows("SELECT uuid, text, summary FROM Note ORDER BY uuid")
        XCTAssertEqual(after.count, 30)
        for (a, b) in zip(rows, after) {
            let body = a[1].stringValue ?? ""
            XCTAssertEqual(b[1].stringValue, body.uppercased().count == body.count ? b[1].stringValue : nil)
            XCTAssertEqual(b[2].stringValue, "\(body.prefix(3))/\(a[2].integerValue.map(String.init) ?? "?")")
        }
    }

    /// A stage reads and assigns the row under its own version's names, even when a later version
    /// renames those attributes, and gives one of the old names to a new attribute.
    func testAStageSeesItsOwnVersionsNamesAfterLaterRenames() throws {
        var v2 = try v1().next()
        try v2.modify("Note") { e throws(SchemaError) in try e.add(Attribute("tag", .string, default: .string("t"))) }
        try v2.addStage(CustomStage("shout", entity: "Note", sql: ["body": "upper(\"body\")"]))
        try v2.addStage(CustomStage("measure", entity: "Note") { _, new in
            guard case .string(let body) = new["body"] else { throw CustomStageError(stage: "measure", message: "no body") }
            new["pages"] = .integer(Int64(body.unicodeScalars.count))
        })
        var v3 = v2.next()
        try v3.modify("Note") { e throws(SchemaError) in
            try e.rename("body", to: "text")
            try e.rename("pages", to: "length")
            try e.add(Attribute("body", .string, default: .string("fresh")))
        }
        let history = try VersionedModel([try v1(), v2, v3])
        let dir = try store(history, rows: 25)
        let expected = try open(dir + "/Cloud.sqlite").rows(
            "SELECT uuid, upper(body), length(upper(body)), 'fresh' FROM Note ORDER BY uuid")
        var options = MigrationOptions()
        options.batchSize = 10
        _ = try StoreDirectory(path: dir, schema: try Schema([history])).migrate(options: options)
        let after = try open(dir + "/Cloud.sqlite").rows("SELECT uuid, text, length, body FROM Note ORDER BY uuid")
        XCTAssertEqual(after.count, 25)
        XCTAssertEqual(after, expected)
    }

    /// Two attributes that trade names (each indexed) are renamed in place, through a name
    /// neither has, and their indexes rebuilt: each index follows its own attribute.
    func testAttributesThatTradeNamesAreRenamedInPlace() throws {
        var v1 = try v1()
        try v1.modify("Note") { e throws(SchemaError) in
            try e.addIndex(Index("body"))
            try e.addIndex(Index("pages"))
        }
        var v2 = v1.next()
        try v2.modify("Note") { e throws(SchemaError) in
            try e.rename("body", to: "trading")
            try e.rename("pages", to: "body")
            try e.rename("trading", to: "pages")
        }
        let history = try VersionedModel([v1, v2])
        let dir = try store(history)
        let before = try open(dir + "/Cloud.sqlite").rows("SELECT uuid, body, pages FROM Note ORDER BY uuid")
        let directory = StoreDirectory(path: dir, schema: try Schema([history]))
        guard case .alter? = try directory.plan().files.first(where: { $0.configuration == "Cloud" })?.method else {
            return XCTFail("precondition: Cloud should be changed in place")
        }
        _ = try directory.migrate()
        let after = try open(dir + "/Cloud.sqlite").rows("SELECT uuid, pages, body FROM Note ORDER BY uuid")
        XCTAssertEqual(after, before)
        XCTAssertEqual(before.count, 20)
    }

    func testAStageThatWritesTheWrongTypeFailsAndChangesNothing() throws {
        var v2 = try v1().next()
        try v2.addStage(CustomStage("broken", entity: "Note") { _, new in new["pages"] = .string("many") })
        let history = try VersionedModel([try v1(), v2.withExtraAttribute()])
        let dir = try store(history)
        let before = try bytes(dir + "/Cloud.sqlite")
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: try Schema([history])).migrate()) { error in
            guard case .stageFailed(let detail)? = (error as? StoreError)?.kind else { return XCTFail("\(error)") }
            XCTAssertTrue(detail.contains("Note.pages"), detail)
        }
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), before)
        XCTAssertEqual(try leftovers(dir), [])
    }

    func testATypeChangeIsRefused() throws {
        var v2 = try v1().next()
        try v2.removeEntity("Note")
        try v2.addEntity(Entity("Note", attributes: [Attribute("uuid", .uuid), Attribute("body", .string),
                                                     Attribute("pages", .double, optional: true)]), in: "Cloud")
        let history = try VersionedModel([try v1(), v2])
        let dir = try store(history)
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: try Schema([history])).migrate()) { error in
            guard case .typeChange(_, "Note", "pages", .integer, .double)? = (error as? StoreError)?.kind else {
                return XCTFail("\(error)")
            }
        }
    }

    /// A store whose shape this build does not list migrates from the model embedded in it, by name.
    func testAnUnknownStoreMigratesFromItsEmbeddedModel() throws {
        // A build that shipped a v2 with an extra optional attribute, which this build never had.
        var foreign = try v1().next()
        try foreign.modify("Note") { e throws(SchemaError) in try e.add(Attribute("tag", .string, optional: true)) }
        let foreignHistory = try VersionedModel([try v1(), foreign])
        let dir = temp.file("foreign")
        try FixtureWriter(schema: try Schema([foreignHistory]), versions: ["Notes": 2], rowsPerEntity: 15).write(to: dir)
        // This build's history: v1, then v2 adds `stars`.
        var ours = try v1().next()
        try ours.modify("Note") { e throws(SchemaError) in try e.add(Attribute("stars", .integer, default: .integer(3))) }
        let schema = try Schema([try VersionedModel([try v1(), ours])])
        let classes = try StoreDirectory(path: dir, schema: schema).inspect()
        XCTAssertTrue(classes.first { $0.configuration == "Cloud" }!.summary.contains("unknown v2 with embedded model"),
                      classes.map(\.summary).joined())
        let bodies = try dump(dir + "/Cloud.sqlite", "Note", columns: ["uuid", "body", "pages"])
        _ = try StoreDirectory(path: dir, schema: schema).migrate()
        XCTAssertEqual(try dump(dir + "/Cloud.sqlite", "Note", columns: ["uuid", "body", "pages"]), bodies)
        XCTAssertEqual(try open(dir + "/Cloud.sqlite").scalar("SELECT count(*) FROM Note WHERE stars = 3"), .integer(15))
    }

    func testAnUnknownStoreWithoutAnEmbeddedModelIsRefusedUntouched() throws {
        let dir = temp.file("bare")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        do {
            let db = try Database(path: dir + "/Cloud.sqlite")
            try db.execute("CREATE TABLE Note (uuid TEXT PRIMARY KEY, body TEXT)")
        }
        let before = try bytes(dir + "/Cloud.sqlite")
        let schema = try Schema([try VersionedModel([try v1()])])
        XCTAssertThrowsError(try StoreDirectory(path: dir, schema: schema).open()) { error in
            guard case .unknown? = (error as? StoreError)?.kind else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains(dir + "/Cloud.sqlite"), "names the file: \(error)")
            XCTAssertTrue("\(error)".contains("without Seam metadata"), "\(error)")
        }
        XCTAssertEqual(try bytes(dir + "/Cloud.sqlite"), before)
    }

    func testEmbeddedModelsDecodeToTheSameHashes() throws {
        for model in [try VersionedModel([try v1()])] {
            for v in model.versions {
                let decoded = try ModelVersion(canonicalJSON: v.canonicalJSON, label: v.version)
                XCTAssertEqual(decoded.hashes, v.hashes)
            }
        }
        XCTAssertThrowsError(try ModelVersion(canonicalJSON: "{\"format\":1}"))
        XCTAssertThrowsError(try ModelVersion(canonicalJSON: try v1Canonical().replacingOccurrences(of: ",", with: ", ")),
                             "non-canonical text is refused")
    }

    /// A model of thousands of entities (what a store file written elsewhere may embed) decodes
    /// to its hashes, each entity in its configuration; one listed twice is refused.
    func testALargeEmbeddedModelDecodes() throws {
        var m = ModelDraft(model: "Many")
        try m.addConfiguration("A")
        try m.addConfiguration("B")
        for i in 0..<3000 {
            let links = i > 0 ? [Link("previousUUID", to: "E\(i - 1)", onDelete: .nullify)] : []
            try m.addEntity(Entity("E\(i)", attributes: [Attribute("uuid", .uuid), Attribute("previousUUID", .uuid, optional: true)],
                                   links: links), in: i % 2 == 0 ? "A" : "B")
        }
        let v = try ModelVersion(m)
        let decoded = try ModelVersion(canonicalJSON: v.canonicalJSON, label: 1)
        XCTAssertEqual(decoded.hashes, v.hashes)
        XCTAssertEqual(decoded.configuration(of: "E2999"), "B")
        XCTAssertEqual(decoded.entity("E1500")?.links.first?.target, "E1499")
        XCTAssertEqual(decoded.entities(in: "A").count, 1500)
        let twice = v.canonicalJSON.replacingOccurrences(of: #""B":["E1","#, with: #""B":["E0","E1","#)
        XCTAssertThrowsError(try ModelVersion(canonicalJSON: twice)) { XCTAssertTrue("\($0)".contains("E0"), "\($0)") }
    }

    private func v1Canonical() throws -> String { try ModelVersion(v1()).canonicalJSON }
}

private extension ModelDraft {
    /// This draft plus an optional attribute, so that it differs in shape from the previous version.
    func withExtraAttribute() throws -> ModelDraft {
        var m = self
        try m.modify("Note") { e throws(SchemaError) in try e.add(Attribute("extra", .bool, optional: true)) }
        return m
    }
}
