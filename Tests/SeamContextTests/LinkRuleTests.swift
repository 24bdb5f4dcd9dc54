import Foundation
import SeamContext
import SeamSchema
import XCTest

/// Delete rules on a small model: deny refuses, none leaves rows dangling, cascades chain.
final class LinkRuleTests: XCTestCase {
    func schema() throws -> Schema {
        var m = ModelDraft(model: "Library")
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(Entity("Shelf", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        try m.addEntity(Entity("Book", attributes: [Attribute("uuid", .uuid), Attribute("shelfUUID", .uuid, optional: true)],
                               links: [Link("shelfUUID", to: "Shelf", onDelete: .deny)]), in: "Cloud")
        try m.addEntity(Entity("Loan", attributes: [Attribute("uuid", .uuid), Attribute("bookUUID", .uuid, optional: true),
                                                    Attribute("noteUUID", .uuid, optional: true)],
                               links: [Link("bookUUID", to: "Book", onDelete: .cascade), Link("noteUUID", to: "Book", onDelete: .none)]),
                        in: "Local")
        return try Schema([try VersionedModel([m])])
    }

    func testDenyRefusesWhileLinkedAndNoneLeavesADanglingLink() throws {
        let context = try Context(inMemory: try schema())
        let shelf = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Shelf", values: [:])]))).changes[0].uuid
        let book = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Book", values: ["shelfUUID": .uuid(shelf)])]))).changes[0].uuid
        XCTAssertThrowsError(try context.save(SaveRequest([.delete(entity: "Shelf", uuid: shelf)]))) { error in
            guard case .deleteDenied("Shelf", shelf, "Book", _)? = (error as? ContextError)?.kind else { return XCTFail("\(error)") }
        }
        // Deleting the book and the shelf in one save is fine: nothing links to the shelf any more.
        let other = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Book", values: [:])]))).changes[0].uuid
        let loan = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Loan", values: ["bookUUID": .uuid(book),
                                                                                             "noteUUID": .uuid(other)])]))).changes[0].uuid
        let set = try XCTUnwrap(context.save(SaveRequest([.delete(entity: "Book", uuid: book), .delete(entity: "Shelf", uuid: shelf)])))
        XCTAssertEqual(Set(set.changes.map(\.entity)), ["Book", "Shelf", "Loan"], "the loan cascades with its book")
        XCTAssertNil(try context.row("Loan", loan))
        let second = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Loan", values: ["noteUUID": .uuid(other)])]))).changes[0].uuid
        try context.save(SaveRequest([.delete(entity: "Book", uuid: other)]))
        XCTAssertEqual(try context.row("Loan", second)?["noteUUID"], .uuid(other), "rule none leaves the link as it was")
        XCTAssertEqual(try context.danglingLinks().map(\.attribute), ["noteUUID"])
    }

    /// A delete that sync brings leaves a row of the other store whose link is required as it is
    /// (dangling), since nil is no value for it; an optional one is cleared. It used to be
    /// cleared either way, and the save refused as missing a value, so sync stuck on it.
    func testASyncDeleteLeavesARequiredLinkInTheOtherStoreAsItIs() throws {
        var m = ModelDraft(model: "Library")
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(Entity("Book", attributes: [Attribute("uuid", .uuid)]), in: "Cloud")
        try m.addEntity(Entity("Loan", attributes: [Attribute("uuid", .uuid), Attribute("bookUUID", .uuid),
                                                    Attribute("noteUUID", .uuid, optional: true)],
                               links: [Link("bookUUID", to: "Book", onDelete: .cascade), Link("noteUUID", to: "Book", onDelete: .cascade)]),
                        in: "Local")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("links-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let context = try Context(directory: directory, schema: try Schema([try VersionedModel([m])]))
        let book = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Book", values: [:])]))).changes[0].uuid
        let loan = try XCTUnwrap(context.save(SaveRequest([.insert(entity: "Loan", values: ["bookUUID": .uuid(book),
                                                                                             "noteUUID": .uuid(book)])]))).changes[0].uuid
        try context.save(SaveRequest([.delete(entity: "Book", uuid: book)]), author: "sync")
        XCTAssertEqual(try context.row("Loan", loan)?["bookUUID"], .uuid(book), "required: kept")
        XCTAssertEqual(try context.row("Loan", loan)?["noteUUID"], .null, "optional: cleared")
    }
}
