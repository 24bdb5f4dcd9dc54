import SeamSchema
import XCTest

/// The hash covers what changes shape or meaning, and nothing else.
final class HashTests: XCTestCase {
    private func draft(_ attributes: [Attribute], indexes: [Index] = [], unique: [UniqueConstraint] = []) throws -> ModelDraft {
        var m = ModelDraft(model: "H")
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(Entity("E", attributes: [Attribute("uuid", .uuid)] + attributes, indexes: indexes, unique: unique), in: "Cloud")
        try m.addEntity(Entity("F", attributes: [Attribute("uuid", .uuid)]), in: "Local")
        return m
    }

    private func hashes(_ m: ModelDraft) throws -> ModelHashes { try ModelVersion(m).hashes }

    func testHashesAreLowercaseHexSHA256OfTheCanonicalJSON() throws {
        let v = try ModelVersion(try draft([Attribute("a", .string)]))
        XCTAssertEqual(v.hashes.model, SHA256.hex(v.canonicalJSON))
        XCTAssertEqual(v.hashes.model.count, 64)
        XCTAssertEqual(Set(v.hashes.configurations.keys), ["Cloud", "Local", "Default"])
        XCTAssertEqual(v.hashes.entities["E"], SHA256.hex(SchemaEncoding.entity(v.entity("E")!).text))
    }

    func testEveryStructuralChangeChangesTheHash() throws {
        let plain = try hashes(try draft([Attribute("a", .string)]))
        let variants: [ModelDraft] = [
            try draft([Attribute("a", .integer)]),
            try draft([Attribute("a", .string, optional: true)]),
            try draft([Attribute("a", .string, default: .string("x"))]),
            try draft([Attribute("a", .string, versionHashModifier: "v2")]),
            try draft([Attribute("b", .string)]),
            try draft([Attribute("a", .string), Attribute("c", .bool, optional: true)]),
            try draft([Attribute("a", .string)], indexes: [Index("a")]),
            try draft([Attribute("a", .string)], unique: [UniqueConstraint("a")]),
        ]
        var seen: Set<String> = [plain.model]
        for v in variants {
            let h = try hashes(v)
            XCTAssertNotEqual(h.entities["E"], plain.entities["E"])
            XCTAssertNotEqual(h.configurations["Cloud"], plain.configurations["Cloud"])
            XCTAssertEqual(h.configurations["Local"], plain.configurations["Local"], "Local is untouched")
            XCTAssertTrue(seen.insert(h.model).inserted, "two variants share a hash")
        }
    }

    func testMovingAnEntityChangesBothConfigurations() throws {
        let before = try draft([Attribute("a", .string)])
        var after = before
        try after.moveEntity("E", to: "Local")
        let (h1, h2) = (try hashes(before), try hashes(after))
        XCTAssertEqual(h1.entities, h2.entities)
        XCTAssertNotEqual(h1.configurations["Cloud"], h2.configurations["Cloud"])
        XCTAssertNotEqual(h1.configurations["Local"], h2.configurations["Local"])
        XCTAssertNotEqual(h1.model, h2.model)
    }

    func testLinksAndModifiersAreCovered() throws {
        var a = try draft([Attribute("f", .uuid, optional: true)])
        let plain = try hashes(a)
        try a.modify("E") { e throws(SchemaError) in try e.addLink(Link("f", to: "F", onDelete: .cascade)) }
        let linked = try hashes(a)
        XCTAssertNotEqual(plain.entities["E"], linked.entities["E"])
        var b = a
        try b.modify("E") { e throws(SchemaError) in
            try e.removeLink(on: "f")
            try e.addLink(Link("f", to: "F", onDelete: .nullify))
        }
        XCTAssertNotEqual(try hashes(b).entities["E"], linked.entities["E"])
        var c = a
        c.versionHashModifier = "meaning-2"
        XCTAssertEqual(try hashes(c).entities, linked.entities)
        XCTAssertNotEqual(try hashes(c).model, linked.model)
    }

    func testRenamingIdentifiersDocumentationAndOrderAreNotCovered() throws {
        let a = try hashes(try draft([Attribute("a", .string), Attribute("b", .integer)]))
        let b = try hashes(try draft([Attribute("b", .integer, documentation: "count"),
                                      Attribute("a", .string, renamingIdentifier: "old")]))
        XCTAssertEqual(a, b)
    }

    func testDefaultsOfEveryTypeEncodeWithoutFloats() throws {
        let e = Entity("E", attributes: [
            Attribute("uuid", .uuid),
            Attribute("s", .string, default: .string("a\"b")),
            Attribute("i", .integer, default: .integer(-7)),
            Attribute("d", .double, default: .double(0.1)),
            Attribute("b", .bool, default: .bool(true)),
            Attribute("t", .date, default: .date(1_700_000_000.5)),
            Attribute("u", .uuid, default: .uuid("00000000-0000-4000-8000-000000000000")),
            Attribute("x", .binary, default: .binary([1, 2, 3])),
            Attribute("j", .json, default: .json(#"{ "b":1, "a":[2.5] }"#)),
        ])
        let text = SchemaEncoding.entity(e).text
        XCTAssertTrue(text.contains(#""d":{"default":"f64:3fb999999999999a","optional":false,"type":"double"}"#), text)
        XCTAssertTrue(text.contains(#""j":{"default":"{\"a\":[2.5],\"b\":1}","optional":false,"type":"json"}"#), text)
        XCTAssertTrue(text.contains(#""x":{"default":"AQID","optional":false,"type":"binary"}"#), text)
        XCTAssertTrue(text.contains(#""i":{"default":-7,"optional":false,"type":"integer"}"#), text)
    }
}
