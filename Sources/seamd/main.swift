// seamd: the Seam store broker. Owns Cloud.sqlite and Local.sqlite; serves clients on a Unix socket.
import SeamBroker
import SeamCommandLine
import SeamStore
import SeamSystem
import SeamTimerService
import SeamTimers

let args = SeamdSpec.tool.arguments(Array(CommandLine.arguments.dropFirst()))
do {
    var level = Logger.Level.info
    if let name = args.value("log-level") {
        guard let l = Logger.Level(name: name) else { throw Arguments.UsageError("--log-level is debug, info, warning or error") }
        level = l
    }
    var configuration = Broker.Configuration(dataDirectory: args.value("data-dir") ?? Environment.dataDirectory,
                                             socketPath: args.value("socket") ?? Environment.socketPath)
    if let d = args.value("durability") {
        guard let durability = Durability(rawValue: d) else { throw Arguments.UsageError("--durability is normal or full") }
        configuration.durability = durability
    }
    configuration.listenDescriptor = Environment.socketActivationDescriptor
    configuration.interfaces = [TimerService.interface]
    // The configuration file is read when one is named, or when roles run (the default file):
    // --no-roles keeps its limits, backups and migration settings, and starts no role.
    if args.value("config") != nil || !args.flag("no-roles") {
        let path = args.value("config") ?? FileSystem.join(Environment.configDirectory, "seamd.json")
        configuration.supervision = SupervisorConfiguration.load(path: path)
        if args.flag("no-roles") {
            configuration.supervision.roles = []
        } else {
            configuration.syncConfigurationPath = SupervisorConfiguration.syncPath(besides: path)
        }
    }
    if let t = args.value("handshake-timeout") {
        guard let seconds = Double(t), seconds > 0, seconds <= 3600 else {
            throw Arguments.UsageError("--handshake-timeout takes seconds, from 0 to 3600")
        }
        configuration.handshakeTimeout = seconds
    }
    if let s = args.value("spin") ?? Environment.value("SEAM_SPIN_MICROSECONDS") {
        guard let microseconds = Int(s), microseconds >= 0, microseconds <= 100_000 else {
            let what = args.value("spin") == nil ? "SEAM_SPIN_MICROSECONDS (--spin)" : "--spin"
            throw Arguments.UsageError("\(what) takes microseconds, from 0 to 100000")
        }
        configuration.spinSeconds = Double(microseconds) / 1_000_000
    }
    // Only to measure what the check of the store files before each save costs (scripts/bench store).
    if Environment.value("SEAM_FILE_CHECKS") == "0" { configuration.verifiesFiles = false }
    if Environment.value("SEAM_METRICS") == "0" { configuration.countsMetrics = false }
    var log = Logger(tag: "seamd", level: level)
    // Under systemd, entries with fields (`journalctl --user -u seamd SEAM_ROLE=ticker`).
    log.journal = Logger.journalWanted
    do {
        let broker = try Broker(configuration: configuration, schema: TimerApp.schema, log: log)
        try broker.run()
    } catch {
        log.error(error.description)
        Terminal.exit(1)
    }
} catch let e as Arguments.UsageError {
    Terminal.fail("seamd", e.message, status: Terminal.usageError)
}
