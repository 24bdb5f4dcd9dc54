// seam-fixture: writes the timer app's store files as an old release wrote them.
import SeamCommandLine
import SeamStore
import SeamTimers

var spec = CommandSet(
    tool: "seam-fixture",
    about: """
        Writes Cloud.sqlite and Local.sqlite into DIR as they were when version V of the timer
        model (or of --model NAME) was current, with the other models at their versions of that
        time, and N generated rows per entity: the stores an old release left behind, for tests and
        benchmarks of migrations.
        """,
    root: Command("", "write the timer app's store files as an old release wrote them",
                  operands: [Operand("DIR", "where to write the stores", complete: .directory)],
                  options: [
                      .value("model", "NAME", "Timers (the default) or SyncMetadata", complete: .words(["Timers", "SyncMetadata"])),
                      .value("version", "V", "the model's version label (1 …)", required: true),
                      .value("rows", "N", "rows per entity (0 … 10,000,000; default 10)"),
                      .value("seed", "S", "the generator's seed (default 1), for reproducible data"),
                  ]))
spec.version = "0.1.0"
spec.manual = Manual(headline: "write the timer app's store files as an old release wrote them", date: "2026-12-06",
                     sections: [.init("See also", [.paragraph("`seam-migrate`(1), `seamd`(1)")])])

let tool = "seam-fixture"
let args = spec.arguments(Array(CommandLine.arguments.dropFirst()))
do {
    let model = args.value("model") ?? TimerModel.name
    guard let version = try args.integer("version", in: 1...1000) else { throw Arguments.UsageError("--version V is required") }
    let rows = try args.integer("rows", in: 0...10_000_000) ?? 10
    let seed = try args.integer("seed", in: 0...Int.max) ?? 1
    guard let release = TimerApp.release(where: model, is: version) else {
        let known = TimerApp.schema.model(model).map { "1 to \($0.versions.count)" } ?? "none (unknown model)"
        Terminal.fail(tool, "\(model) has no version \(version); versions: \(known)")
    }
    let writer = FixtureWriter(schema: TimerApp.schema, versions: release, rowsPerEntity: rows, seed: UInt64(seed))
    try writer.write(to: args.positional[0]) { n in
        if Terminal.stderrIsTerminal { Terminal.progress("\rwritten \(n) rows") }
    }
    if Terminal.stderrIsTerminal { Terminal.progress("\r") }
    print("wrote " + release.sorted { $0.key < $1.key }.map { "\($0.key) v\($0.value)" }.joined(separator: ", ")
          + " with \(rows) rows per entity to \(args.positional[0])")
} catch let e as Arguments.UsageError {
    Terminal.fail(tool, e.message, status: Terminal.usageError)
} catch {
    Terminal.fail(tool, "\(error)")
}
