import SeamSchema
import SeamTimers
import XCTest

/// The timer model's current version is the contract `design.md` fixes.
final class TimerModelTests: XCTestCase {
    func testTheHistoryBuilds() throws {
        XCTAssertEqual(try TimerModel.build().versions.count, 7)
        XCTAssertEqual(try SyncMetadataModel.build().versions.count, 2)
        XCTAssertEqual(TimerApp.schema.configurations, ["Cloud", "Local"])
    }

    func testCurrentEntitiesAndAttributesAreTheContract() throws {
        let v = TimerModel.history.current
        let expected: [String: (String, [String])] = [
            "Timer": ("Cloud", ["uuid", "name", "icon", "colour", "steps", "repeatCount", "groupUUID", "sortOrder", "createdAt",
                                "modifiedAt", "sound"]),
            "UserGroup": ("Cloud", ["uuid", "name", "sortOrder", "createdAt", "modifiedAt"]),
            "Session": ("Local", ["uuid", "timerUUID", "name", "icon", "colour", "steps", "repeatCount", "state", "startedAt",
                                  "pausedAt", "stepIndex", "round", "stepEndsAt", "finishedAt", "note", "sound"]),
        ]
        XCTAssertEqual(Set(v.entities.map(\.name)), Set(expected.keys))
        for (name, (configuration, attributes)) in expected {
            let e = try XCTUnwrap(v.entity(name))
            XCTAssertEqual(Set(e.attributes.map(\.name)), Set(attributes), name)
            XCTAssertEqual(v.configuration(of: name), configuration, name)
        }
        let session = try XCTUnwrap(v.entity("Session"))
        XCTAssertEqual(session.attribute("timerUUID")?.isOptional, true, "nil for a flash timer")
        XCTAssertEqual(session.attribute("steps")?.type, .json)
        XCTAssertEqual(session.attribute("note"), Attribute("note", .string, default: .string("")), "a note, empty by default, never nil")
        let sound = Attribute("sound", .string, default: .string(""))
        XCTAssertEqual(v.entity("Timer")?.attribute("sound"), sound, "a sound, empty by default, never nil")
        XCTAssertEqual(session.attribute("sound"), sound, "the session's copy of its timer's sound")
        XCTAssertTrue(session.uniqueConstraints.contains(UniqueConstraint("timerUUID")), "one session per timer")
        XCTAssertEqual(session.link(on: "timerUUID"), Link("timerUUID", to: "Timer", onDelete: .cascade))
        XCTAssertEqual(v.entity("Timer")?.link(on: "groupUUID"), Link("groupUUID", to: "UserGroup", onDelete: .nullify))
        for e in v.entities {
            for a in e.attributes where a.name.hasSuffix("At") { XCTAssertEqual(a.type, .date, "\(e.name).\(a.name)") }
        }
    }

    func testSyncMetadataSharesTheCloudFile() {
        let cloud = TimerApp.schema.models(in: "Cloud").map(\.name)
        XCTAssertEqual(cloud, ["Timers", "SyncMetadata"])
        XCTAssertEqual(TimerApp.schema.models(in: "Local").map(\.name), ["Timers"])
        XCTAssertEqual(TimerApp.schema.entity("SyncRecord")?.configuration, "Cloud")
    }

    /// Every kind of change the schema language has is used somewhere in the history.
    func testHistoryExercisesEveryKindOfChange() throws {
        let vs = TimerModel.history.versions
        func attrs(_ v: ModelVersion, _ e: String) -> [Attribute] { v.entity(e)?.attributes ?? [] }
        // Entities added, removed, renamed, moved.
        XCTAssertNotNil(vs[0].entity("Setting")); XCTAssertNil(vs[1].entity("Setting"))
        XCTAssertEqual(vs[2].entity("UserGroup")?.renamingIdentifier, "Folder")
        XCTAssertEqual(vs[3].entity("Session")?.renamingIdentifier, "Run")
        XCTAssertEqual(vs[1].configuration(of: "Run"), "Cloud"); XCTAssertEqual(vs[2].configuration(of: "Run"), "Local")
        // Attributes added, removed, renamed; optionality and defaults changed.
        XCTAssertNotNil(vs[0].entity("Timer")?.attribute("duration")); XCTAssertNil(vs[1].entity("Timer")?.attribute("duration"))
        XCTAssertEqual(vs[1].entity("Timer")?.attribute("name")?.renamingIdentifier, "title")
        XCTAssertEqual(vs[2].entity("Timer")?.attribute("colour")?.isOptional, false)
        XCTAssertEqual(vs[2].entity("Timer")?.attribute("icon")?.defaultValue, .string("clock"))
        XCTAssertEqual(vs[3].entity("Session")?.attribute("timerUUID")?.isOptional, true)
        XCTAssertTrue(attrs(vs[3], "Session").count > attrs(vs[2], "Run").count)
        // Indexes and constraints added and removed.
        XCTAssertEqual(vs[2].entity("Timer")?.indexes, [Index("groupUUID")])
        XCTAssertEqual(vs[2].entity("UserGroup")?.uniqueConstraints, [])
        XCTAssertEqual(vs[3].entity("Session")?.indexes, [Index("state")])
        // Custom stages.
        XCTAssertEqual(vs[1].customStages.map(\.name), ["durationToSteps"])
    }

    /// Version 5 only adds `Session.note`, at the end of the table, with no stage
    /// (`FrozenHistoryTests` compares the committed versions 4 and 5 in full).
    func testVersion5OnlyAddsTheSessionNote() throws {
        let v4 = try XCTUnwrap(TimerModel.history.version(4)), v5 = try XCTUnwrap(TimerModel.history.version(5))
        XCTAssertEqual(v5.entity("Session")?.attributes.map(\.name), (v4.entity("Session")?.attributes.map(\.name) ?? []) + ["note"])
        XCTAssertEqual(v5.customStages.map(\.name), [], "an added attribute with a default needs no stage")
        XCTAssertEqual(v5.hashes.configurations["Cloud"], v4.hashes.configurations["Cloud"], "a Cloud file of release 4 was current")
        XCTAssertEqual(try TimerModel.draft(5).version, 5)
    }

    /// Version 6 only adds `sound` to Timer and to Session, each at the end of its table, with
    /// no stage; both files change (`FrozenHistoryTests` compares the committed versions 5 and 6
    /// in full).
    func testVersion6OnlyAddsTheTimerAndSessionSound() throws {
        let v5 = try XCTUnwrap(TimerModel.history.version(5)), v6 = try XCTUnwrap(TimerModel.history.version(6))
        XCTAssertEqual(v6.version, 6)
        for name in ["Timer", "Session"] {
            XCTAssertEqual(v6.entity(name)?.attributes.map(\.name), (v5.entity(name)?.attributes.map(\.name) ?? []) + ["sound"], name)
        }
        XCTAssertEqual(v6.entity("UserGroup"), v5.entity("UserGroup"))
        XCTAssertEqual(v6.customStages.map(\.name), [], "an added attribute with a default needs no stage")
        XCTAssertNotEqual(v6.hashes.configurations["Cloud"], v5.hashes.configurations["Cloud"], "a Cloud file of release 5 is outdated")
        XCTAssertNotEqual(v6.hashes.configurations["Local"], v5.hashes.configurations["Local"])
        XCTAssertEqual(try TimerModel.draft(6).version, 6)
    }

    /// Version 7 is current and only marks what a person wrote as `encrypted` — Timer's name
    /// and steps, UserGroup's name — changing no column: the Cloud file's shape is new (its hash),
    /// the Local file's is version 6's, and no stage runs.
    func testVersion7IsCurrentAndOnlyMarksNamesAndStepsEncrypted() throws {
        let v6 = try XCTUnwrap(TimerModel.history.version(6)), v7 = TimerModel.history.current
        XCTAssertEqual(v7.version, 7)
        for name in ["Timer", "UserGroup", "Session"] {
            let marked = Set(v7.entity(name)?.attributes.filter { $0.transformer == .encrypted }.map(\.name) ?? [])
            XCTAssertEqual(marked, ["Timer": ["name", "steps"], "UserGroup": ["name"]][name] ?? [], name)
            var unmarked = v7.entity(name)
            for i in unmarked?.attributes.indices ?? 0..<0 { unmarked?.attributes[i].transformer = nil }
            XCTAssertEqual(unmarked, v6.entity(name), "\(name): nothing else changed")
        }
        XCTAssertNotEqual(v7.hashes.configurations["Cloud"], v6.hashes.configurations["Cloud"], "a Cloud file of release 6 is outdated")
        XCTAssertEqual(v7.hashes.configurations["Local"], v6.hashes.configurations["Local"], "a Local file of release 6 is current")
        XCTAssertEqual(v7.customStages.map(\.name), [])
        XCTAssertEqual(try TimerModel.draft(7).version, 7)
        XCTAssertThrowsError(try TimerModel.draft(8))
    }

    /// The timer model's stages are SQL, so a million-row migration stays a bulk copy
    /// (`MigrationTests` checks what they produce).
    func testStagesAreSQL() throws {
        let stages = TimerModel.history.versions.flatMap(\.customStages)
        XCTAssertEqual(stages.map(\.name), ["durationToSteps", "finishedRunsGetFinishTime", "oneSessionPerTimer"])
        XCTAssertTrue(stages.allSatisfy { $0.assignments != nil || $0.afterCopySQL != nil })
    }
}
