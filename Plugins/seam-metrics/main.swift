// seam-metrics: seamd's metrics as Prometheus's text, on 127.0.0.1:PORT/metrics.
import SeamClient
import SeamCommandLine
import SeamSystem

var spec = CommandSet(
    tool: "seam-metrics",
    about: """
        Serves what seamd counts of itself (org.seam.Metrics.Get) in Prometheus's text exposition
        format at http://127.0.0.1:PORT/metrics, for Prometheus or any scraper to read. It listens
        on the loopback only, answers GET and HEAD of /metrics only, and refuses a request whose
        Host is not 127.0.0.1, localhost or [::1] (a page whose name was rebound to this machine
        reads nothing). seamd runs it as the `metrics` role when seamd.json enables it.
        """,
    root: Command("", "serve seamd's metrics over HTTP on the loopback",
                  options: [.value("port", "PORT", "the TCP port on 127.0.0.1 (default 9464; 0 picks a free one and logs it)"),
                            .value("socket", "PATH", "the socket of seamd (default as seam finds it)", complete: .file)]))
spec.version = "0.1.0"
spec.manual = Manual(headline: "serve seamd's metrics to Prometheus on 127.0.0.1", date: "2026-12-07",
                     sections: [.init("Enabling", [.paragraph("""
                         In *$XDG_CONFIG_HOME/seam/seamd.json*: `{"roles": {"metrics": {"enabled": true, "port": 9464}}}`, \
                         then `seam down` and `seam up` (or `systemctl --user restart seamd`). A Prometheus job then scrapes \
                         *127.0.0.1:9464*; `seam metrics` prints the same text without it.
                         """)]),
                                .init("See also", [.paragraph("`seamd`(1), `seam`(1)")])])

let args = spec.arguments(Array(CommandLine.arguments.dropFirst()))
let port: Int
if let text = args.value("port") {
    guard let n = Int(text), (0...65_535).contains(n) else {
        Terminal.fail("seam-metrics", "--port takes a port number from 0 to 65535, not '\(text)'", status: Terminal.usageError)
    }
    port = n
} else {
    port = 9464
}
// Started by seamd (its connection on $SEAM_FD), it ends with seamd.
if Environment.value("SEAM_FD") != nil, !Processes.dieWithParent() {
    Terminal.fail("seam-metrics", "seamd, which started it, is gone")
}
do {
    let broker = try SeamConnection.connect(path: args.value("socket"))
    _ = try broker.hello()  // started by seamd, its connection already holds the metrics role
    let server = try MetricsServer(port: port, broker: broker) { Terminal.error("seam-metrics: " + $0) }
    Terminal.error("seam-metrics: serving http://127.0.0.1:\(server.port)/metrics")
    server.run()
} catch let e as SystemError where e.errno == SystemError.addressInUse {
    Terminal.fail("seam-metrics", "127.0.0.1:\(port) is taken by another program; give the metrics role another port in seamd.json")
} catch {
    Terminal.fail("seam-metrics", "\(error)")
}
