import SeamSchema

/// The timer model, with every version it has ever had.
///
/// Timer definitions and their folders live in `Cloud`; runs live in `Local`. Each version is
/// written as a change to the one before; shipped versions are frozen (their canonical JSON is
/// committed under `Protocol/schemas/Timers`, and a test fails if one changes).
///
/// History:
/// 1. `Timer` with a title and a single `duration`; `Folder`; `Run` (in Cloud, by mistake);
///    `Setting`.
/// 2. A timer becomes a list of steps (custom stage `durationToSteps`); `title` → `name`;
///    icon and repeat count; `Setting` removed; runs remember their step.
/// 3. `Folder` → `UserGroup` with sort order; `folderUUID` → `groupUUID`; `colour` required;
///    runs move to `Local`, so they never sync.
/// 4. `Run` → `Session`: copies of the timer's fields, pause and finish times, rounds, one
///    session per timer (unique `timerUUID`, nil for a flash timer; a timer's other runs are
///    kept unlinked), indexed by state.
/// 5. A session gets a `note` (empty by default), given when it starts.
/// 6. A timer gets a `sound` (empty by default); a session copies it when it starts.
/// 7. What a person wrote leaves the machine sealed: `Timer.name`, `Timer.steps` (their labels)
///    and `UserGroup.name` are `encrypted` (the sync server holds ciphertext; the stores keep
///    them in clear, so the migration rewrites no row).
public enum TimerModel {
    public static let name = "Timers"

    /// Every version, validated. A mistake in a version stops the program at start with the
    /// `SchemaError` that names it; `TimerModelTests` builds the history first, so CI sees it.
    public static let history: VersionedModel = {
        do { return try build() } catch { fatalError("invalid timer model: \(error)") }
    }()

    public static func build() throws(SchemaError) -> VersionedModel {
        try VersionedModel([try v1(), try v2(), try v3(), try v4(), try v5(), try v6(), try v7()])
    }

    /// The draft of version `label`, for building a later version on top of it (tests,
    /// benchmarks, and the next shipped version).
    public static func draft(_ label: Int) throws(SchemaError) -> ModelDraft {
        switch label {
        case 1: return try v1()
        case 2: return try v2()
        case 3: return try v3()
        case 4: return try v4()
        case 5: return try v5()
        case 6: return try v6()
        case 7: return try v7()
        default: throw SchemaError(.versionOutOfOrder(expected: 7), model: name, version: label)
        }
    }

    static func v1() throws(SchemaError) -> ModelDraft {
        var m = ModelDraft(model: name)
        try m.addConfiguration("Cloud")
        try m.addConfiguration("Local")
        try m.addEntity(
            Entity(
                "Timer",
                attributes: [
                    Attribute("uuid", .uuid),
                    Attribute("title", .string),
                    Attribute("duration", .integer, default: .integer(60)),
                    Attribute("colour", .string, optional: true),
                    Attribute("folderUUID", .uuid, optional: true),
                    Attribute("createdAt", .date, default: .date(0)),
                ],
                indexes: [Index("title")],
                links: [Link("folderUUID", to: "Folder", onDelete: .nullify)]
            ),
            in: "Cloud"
        )
        try m.addEntity(
            Entity(
                "Folder",
                attributes: [Attribute("uuid", .uuid), Attribute("name", .string), Attribute("createdAt", .date, default: .date(0))],
                unique: [UniqueConstraint("name")]
            ),
            in: "Cloud"
        )
        try m.addEntity(
            Entity(
                "Run",
                attributes: [
                    Attribute("uuid", .uuid),
                    Attribute("timerUUID", .uuid),
                    Attribute("state", .string, default: .string("running")),
                    Attribute("startedAt", .date),
                    Attribute("endsAt", .date),
                ],
                indexes: [Index("timerUUID")],
                links: [Link("timerUUID", to: "Timer", onDelete: .cascade)]
            ),
            in: "Cloud"
        )
        try m.addEntity(
            Entity("Setting", attributes: [Attribute("uuid", .uuid), Attribute("key", .string), Attribute("value", .string, optional: true)],
                   unique: [UniqueConstraint("key")]),
            in: "Cloud"
        )
        return m
    }

    static func v2() throws(SchemaError) -> ModelDraft {
        var m = try v1().next()
        try m.modify("Timer") { e throws(SchemaError) in
            try e.rename("title", to: "name")
            try e.add(Attribute("steps", .json, default: .json("[]")))
            try e.add(Attribute("icon", .string, default: .string("timer")))
            try e.add(Attribute("repeatCount", .integer, default: .integer(1)))
            try e.remove("duration")
        }
        try m.addStage(CustomStage("durationToSteps", entity: "Timer", sql: [
            "steps": #"json_array(json_object('label', "old.title", 'seconds', "old.duration"))"#,
        ]))
        try m.modify("Run") { e throws(SchemaError) in
            try e.add(Attribute("stepIndex", .integer, default: .integer(0)))
        }
        try m.removeEntity("Setting")
        return m
    }

    static func v3() throws(SchemaError) -> ModelDraft {
        var m = try v2().next()
        try m.renameEntity("Folder", to: "UserGroup")
        try m.modify("UserGroup") { e throws(SchemaError) in
            try e.removeUnique(UniqueConstraint("name"))
            try e.add(Attribute("sortOrder", .integer, default: .integer(0)))
            try e.add(Attribute("modifiedAt", .date, default: .date(0)))
        }
        try m.modify("Timer") { e throws(SchemaError) in
            try e.rename("folderUUID", to: "groupUUID")
            try e.setOptional("colour", false, default: .string("blue"))
            try e.setDefault("icon", .string("clock"))
            try e.add(Attribute("sortOrder", .integer, default: .integer(0)))
            try e.add(Attribute("modifiedAt", .date, default: .date(0)))
            try e.removeIndex(Index("name"))
            try e.addIndex(Index("groupUUID"))
        }
        try m.moveEntity("Run", to: "Local")
        return m
    }

    static func v4() throws(SchemaError) -> ModelDraft {
        var m = try v3().next()
        try m.renameEntity("Run", to: "Session")
        try m.modify("Session") { e throws(SchemaError) in
            try e.setOptional("timerUUID", true)
            try e.removeIndex(Index("timerUUID"))
            try e.addUnique(UniqueConstraint("timerUUID"))
            try e.addIndex(Index("state"))
            try e.rename("endsAt", to: "stepEndsAt")
            try e.setOptional("stepEndsAt", true)
            try e.add(Attribute("name", .string, default: .string("")))
            try e.add(Attribute("icon", .string, default: .string("clock")))
            try e.add(Attribute("colour", .string, default: .string("blue")))
            try e.add(Attribute("steps", .json, default: .json("[]")))
            try e.add(Attribute("repeatCount", .integer, default: .integer(1)))
            try e.add(Attribute("pausedAt", .date, optional: true))
            try e.add(Attribute("round", .integer, default: .integer(0)))
            try e.add(Attribute("finishedAt", .date, optional: true))
        }
        try m.addStage(CustomStage("finishedRunsGetFinishTime", entity: "Session", sql: [
            "finishedAt": #"CASE WHEN "state" = 'finished' AND "finishedAt" IS NULL THEN "stepEndsAt" ELSE "finishedAt" END"#,
        ]))
        // Release 3 kept every run of a timer; a session is now the one run of its timer. The
        // one that is still going (else the latest) keeps the link; the others stay, unlinked,
        // as a flash timer's sessions are, rather than stop the unique constraint being built.
        try m.addStage(CustomStage("oneSessionPerTimer", entity: "Session", afterCopy: """
            UPDATE "Session" SET "timerUUID" = NULL WHERE "uuid" IN (SELECT "uuid" FROM (SELECT "uuid", row_number() OVER (\
            PARTITION BY "timerUUID" ORDER BY "state" != 'finished' DESC, "startedAt" DESC, "uuid" DESC) AS "n" \
            FROM "Session" WHERE "timerUUID" IS NOT NULL) WHERE "n" > 1)
            """))
        return m
    }

    static func v5() throws(SchemaError) -> ModelDraft {
        var m = try v4().next()
        try m.modify("Session") { e throws(SchemaError) in
            try e.add(Attribute("note", .string, default: .string("")))
        }
        return m
    }

    static func v6() throws(SchemaError) -> ModelDraft {
        var m = try v5().next()
        try m.modify("Timer") { e throws(SchemaError) in
            try e.add(Attribute("sound", .string, default: .string("")))
        }
        try m.modify("Session") { e throws(SchemaError) in
            try e.add(Attribute("sound", .string, default: .string("")))
        }
        return m
    }

    static func v7() throws(SchemaError) -> ModelDraft {
        var m = try v6().next()
        try m.modify("Timer") { e throws(SchemaError) in
            try e.setTransformer("name", .encrypted)
            try e.setTransformer("steps", .encrypted)
        }
        try m.modify("UserGroup") { e throws(SchemaError) in
            try e.setTransformer("name", .encrypted)
        }
        return m
    }
}
