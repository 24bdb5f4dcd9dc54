import SeamSchema
import XCTest

/// Every schema mistake a developer can make fails at model construction, naming where.
final class ValidationTests: XCTestCase {
    private func base() throws -> ModelDraft {
        var m = ModelDraft(model: "Shop")
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(Entity("Item", attributes: [Attribute("uuid", .uuid), Attribute("title", .string)]), in: "Cloud")
        try m.addEntity(Entity("Cart", attributes: [Attribute("uuid", .uuid), Attribute("itemUUID", .uuid, optional: true)],
                               links: [Link("itemUUID", to: "Item", onDelete: .nullify)]), in: "Local")
        return m
    }

    /// Asserts that `body` throws a SchemaError of `kind` at the given place, and that the
    /// message names the version, the entity and the attribute.
    private func expect(
        _ kind: SchemaError.Kind, version: Int? = 1, entity: String? = nil, attribute: String? = nil,
        file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
    ) {
        do {
            try body()
            XCTFail("expected \(kind)", file: file, line: line)
        } catch let e as SchemaError {
            XCTAssertEqual(e.kind, kind, file: file, line: line)
            XCTAssertEqual(e.version, version, file: file, line: line)
            XCTAssertEqual(e.entity, entity, file: file, line: line)
            XCTAssertEqual(e.attribute, attribute, file: file, line: line)
            if let version { XCTAssertTrue(e.description.contains("v\(version)"), e.description, file: file, line: line) }
            if let entity { XCTAssertTrue(e.description.contains("entity \(entity)"), e.description, file: file, line: line) }
            if let attribute {
                XCTAssertTrue(e.description.contains("attribute \(attribute)"), e.description, file: file, line: line)
            }
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }

    func testAValidModelBuilds() throws {
        let model = try VersionedModel([try base()])
        XCTAssertEqual(model.current.configuration(of: "Cart"), "Local")
        XCTAssertEqual(model.current.entities(in: "Default").count, 2)
    }

    func testDuplicateEntity() throws {
        var m = try base()
        expect(.duplicateEntity, entity: "Item") { try m.addEntity(Entity("Item", attributes: [Attribute("uuid", .uuid)]), in: "Cloud") }
    }

    func testDuplicateAttributeWhenAddingAndInADefinition() throws {
        var m = try base()
        expect(.duplicateAttribute, entity: "Item", attribute: "title") {
            try m.modify("Item") { e throws(SchemaError) in try e.add(Attribute("title", .string, optional: true)) }
        }
        var m2 = try base()
        try m2.addEntity(Entity("Twice", attributes: [Attribute("uuid", .uuid), Attribute("a", .string), Attribute("a", .integer)]),
                         in: "Cloud")
        expect(.duplicateAttribute, entity: "Twice", attribute: "a") { _ = try ModelVersion(m2) }
    }

    /// What SQLite would refuse when the store is built is refused when the model is: names that
    /// differ only in case, two indexes (or an index and a table) of one name, a unique
    /// constraint twice, and a nullify link on a required attribute.
    func testWhatSQLiteWouldRefuseIsRefusedAtConstruction() throws {
        var m = try base()
        try m.addEntity(Entity("item", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        expect(.namesDifferOnlyInCase("Item"), entity: "item") { _ = try ModelVersion(m) }

        m = try base()
        try m.modify("Item") { e throws(SchemaError) in try e.add(Attribute("Title", .string, optional: true)) }
        expect(.namesDifferOnlyInCase("title"), entity: "Item", attribute: "Title") { _ = try ModelVersion(m) }

        m = try base()
        try m.modify("Item") { e throws(SchemaError) in
            try e.add(Attribute("b_c", .string, optional: true))
            try e.add(Attribute("b", .string, optional: true))
            try e.add(Attribute("c", .string, optional: true))
            try e.addIndex(Index("b_c"))
            try e.addIndex(Index(["b", "c"]))
        }
        expect(.indexNameClash("Item_idx_b_c"), entity: "Item") { _ = try ModelVersion(m) }

        m = try base()
        try m.addEntity(Entity("Item_idx_title", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        try m.modify("Item") { e throws(SchemaError) in try e.addIndex(Index("title")) }
        expect(.indexNameClash("Item_idx_title"), entity: "Item") { _ = try ModelVersion(m) }

        m = try base()
        try m.removeEntity("Item")
        try m.removeEntity("Cart")
        try m.addEntity(Entity("Item", attributes: [Attribute("uuid", .uuid), Attribute("title", .string)],
                               unique: [UniqueConstraint("title"), UniqueConstraint("title")]), in: "Cloud")
        expect(.duplicateConstraint(["title"]), entity: "Item") { _ = try ModelVersion(m) }

        m = try base()
        try m.removeEntity("Cart")
        try m.addEntity(Entity("Cart", attributes: [Attribute("uuid", .uuid), Attribute("itemUUID", .uuid)],
                               links: [Link("itemUUID", to: "Item", onDelete: .nullify)]), in: "Local")
        expect(.nullifyRequired, entity: "Cart", attribute: "itemUUID") { _ = try ModelVersion(m) }
    }

    func testTwoModelsMayNotNameEntitiesAlikeButForCase() throws {
        let shop = try VersionedModel([try base()])
        var other = ModelDraft(model: "Other")
        try other.addConfiguration("Cloud")
        try other.addEntity(Entity("ITEM", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        XCTAssertThrowsError(try Schema([shop, try VersionedModel([other])])) { e in
            XCTAssertEqual((e as? SchemaError)?.kind, .entityNameClash(otherModel: "Shop"))
        }
    }

    func testLinkToMissingEntity() throws {
        var m = try base()
        try m.modify("Cart") { e throws(SchemaError) in
            try e.removeLink(on: "itemUUID")
            try e.addLink(Link("itemUUID", to: "Nowhere", onDelete: .cascade))
        }
        expect(.linkToUnknownEntity("Nowhere"), entity: "Cart", attribute: "itemUUID") { _ = try ModelVersion(m) }
    }

    func testLinkOnANonUUIDAttribute() throws {
        var m = try base()
        try m.modify("Item") { e throws(SchemaError) in
            try e.add(Attribute("cartRef", .string, optional: true))
            try e.addLink(Link("cartRef", to: "Cart", onDelete: .none))
        }
        expect(.linkAttributeNotUUID(.string), entity: "Item", attribute: "cartRef") { _ = try ModelVersion(m) }
    }

    func testRequiredAttributeAddedWithoutDefault() throws {
        var m = try base().next()
        expect(.requiredAddedWithoutDefault, version: 2, entity: "Item", attribute: "price") {
            try m.modify("Item") { e throws(SchemaError) in try e.add(Attribute("price", .integer)) }
        }
    }

    func testRequiredAttributeOnANewEntityNeedsNoDefault() throws {
        var m = try base().next()
        try m.addEntity(Entity("Fresh", attributes: [Attribute("uuid", .uuid), Attribute("n", .integer)]), in: "Cloud")
        try m.modify("Fresh") { e throws(SchemaError) in try e.add(Attribute("m", .integer)) }
        XCTAssertNoThrow(try VersionedModel([try base(), m]))
    }

    func testMakingRequiredNeedsADefault() throws {
        var m = try base().next()
        expect(.requiredAddedWithoutDefault, version: 2, entity: "Cart", attribute: "itemUUID") {
            try m.modify("Cart") { e throws(SchemaError) in try e.setOptional("itemUUID", false) }
        }
    }

    func testRenameOfSomethingThatDoesNotExist() throws {
        var m = try base().next()
        expect(.unknownAttribute, version: 2, entity: "Item", attribute: "colour") {
            try m.modify("Item") { e throws(SchemaError) in try e.rename("colour", to: "color") }
        }
        expect(.unknownEntity, version: 2, entity: "Ghost") { try m.renameEntity("Ghost", to: "Spirit") }
        expect(.renameTargetExists("Cart"), version: 2, entity: "Item") { try m.renameEntity("Item", to: "Cart") }
    }

    func testStoreLevelRelationshipAcrossConfigurations() throws {
        var m = try base()
        try m.modify("Cart") { e throws(SchemaError) in
            try e.removeLink(on: "itemUUID")
            try e.addLink(Link("itemUUID", to: "Item", onDelete: .cascade, kind: .relationship))
        }
        expect(.relationshipAcrossConfigurations(source: "Cart (Local)", target: "Item (Cloud)"),
               entity: "Cart", attribute: "itemUUID") { _ = try ModelVersion(m) }
    }

    func testEntityInNoConfiguration() throws {
        var m = try base()
        try m.addConfiguration("Spare")
        try m.addEntity(Entity("Loose", attributes: [Attribute("uuid", .uuid)]), in: "Spare")
        XCTAssertNoThrow(try ModelVersion(m))
        try m.removeConfiguration("Spare")
        expect(.entityInNoConfiguration, entity: "Loose") { _ = try ModelVersion(m) }
        expect(.configurationNotDeclared("Spare")) { try m.removeConfiguration("Spare") }
    }

    func testDefaultConfigurationIsImplicit() throws {
        var m = ModelDraft(model: "X")
        expect(.reservedConfiguration) { try m.addConfiguration("Default") }
        expect(.configurationNotDeclared("Nope"), entity: "A") {
            try m.addEntity(Entity("A", attributes: [Attribute("uuid", .uuid)]), in: "Nope")
        }
    }

    func testIdentityIsRequired() throws {
        var m = try base()
        try m.addEntity(Entity("NoID", attributes: [Attribute("name", .string)]), in: "Cloud")
        expect(.missingIdentity, entity: "NoID", attribute: "uuid") { _ = try ModelVersion(m) }
        var m2 = try base()
        try m2.addEntity(Entity("TextID", attributes: [Attribute("uuid", .string)]), in: "Cloud")
        expect(.missingIdentity, entity: "TextID", attribute: "uuid") { _ = try ModelVersion(m2) }
    }

    func testDefaultsMustFitTheirAttribute() throws {
        let cases: [(Attribute, SchemaError.Kind)] = [
            (Attribute("a", .integer, default: .string("1")), .defaultTypeMismatch(expected: .integer, found: .string)),
            (Attribute("a", .integer, default: .null), .requiredDefaultIsNull),
            (Attribute("a", .uuid, default: .uuid("ABC")), .invalidDefault("'ABC' is not a lowercase uuid")),
            (Attribute("a", .double, default: .double(.nan)), .invalidDefault("not a finite number")),
            (Attribute("a", .json, default: .json("{")), .invalidDefault("invalid JSON at byte 1: expected a string")),
            // A date no RFC 3339 timestamp can write, which the store would refuse to hold.
            (Attribute("a", .date, default: .date(1e300)), .invalidDefault(AttributeValue.dateRangeText)),
            (Attribute("a", .date, default: .date(-62_135_596_801)), .invalidDefault(AttributeValue.dateRangeText)),
        ]
        for (attribute, kind) in cases {
            var m = try base()
            try m.addEntity(Entity("D", attributes: [Attribute("uuid", .uuid), attribute]), in: "Cloud")
            expect(kind, entity: "D", attribute: "a") { _ = try ModelVersion(m) }
        }
    }

    func testInvalidNames() throws {
        for bad in ["", "9lives", "has space", "seam_meta", "sqlite_master", "dash-ed", String(repeating: "x", count: 65)] {
            var m = try base()
            try m.addEntity(Entity(bad, attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
            expect(.invalidName(bad), entity: bad) { _ = try ModelVersion(m) }
        }
    }

    func testIndexesAndConstraints() throws {
        var m = try base()
        expect(.unknownAttribute, entity: "Item", attribute: "nope") {
            try m.modify("Item") { e throws(SchemaError) in try e.addIndex(Index("nope")) }
        }
        expect(.emptyIndex, entity: "Item") { try m.modify("Item") { e throws(SchemaError) in try e.addIndex(Index([])) } }
        try m.modify("Item") { e throws(SchemaError) in try e.addIndex(Index("title")) }
        expect(.duplicateIndex(["title"]), entity: "Item") {
            try m.modify("Item") { e throws(SchemaError) in try e.addIndex(Index("title")) }
        }
        expect(.unknownIndex(["uuid"]), entity: "Item") {
            try m.modify("Item") { e throws(SchemaError) in try e.removeIndex(Index("uuid")) }
        }
        expect(.unknownConstraint(["title"]), entity: "Item") {
            try m.modify("Item") { e throws(SchemaError) in try e.removeUnique(UniqueConstraint("title")) }
        }
    }

    func testTwoLabelsForOneShapeAreRefused() throws {
        let v1 = try base()
        let v2 = v1.next()
        expect(.sameShapeAsVersion(1), version: 2) { _ = try VersionedModel([v1, v2]) }
    }

    func testLabelsAreConsecutive() throws {
        let v1 = try base()
        var v3 = v1.next().next()
        try v3.modify("Item") { e throws(SchemaError) in try e.add(Attribute("n", .integer, optional: true)) }
        expect(.versionOutOfOrder(expected: 2), version: 3) { _ = try VersionedModel([v1, v3]) }
        expect(.emptyHistory, version: nil) { _ = try VersionedModel([]) }
    }

    func testStagesNeedAnEntityAndAUniqueName() throws {
        var m = try base().next()
        let noop: CustomStage.Transform = { _, _ in }
        expect(.unknownEntity, version: 2, entity: "Ghost") { try m.addStage(CustomStage("s", entity: "Ghost", transform: noop)) }
        try m.addStage(CustomStage("s", entity: "Item", transform: noop))
        expect(.duplicateStageName("s"), version: 2, entity: "Item") { try m.addStage(CustomStage("s", entity: "Item", transform: noop)) }
    }

    func testSchemaRefusesOneEntityNameInTwoModels() throws {
        let a = try VersionedModel([try base()])
        var other = ModelDraft(model: "Other")
        try other.addConfiguration("Cloud")
        try other.addEntity(Entity("Item", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        let b = try VersionedModel([other])
        do {
            _ = try Schema([a, b])
            XCTFail("expected a clash")
        } catch {
            XCTAssertEqual(error.kind, .entityNameClash(otherModel: "Shop"))
            XCTAssertEqual(error.entity, "Item")
        }
    }
}
