import SeamClient
import SeamCommandLine
import SeamJSON
import SeamSystem

/// `seam web`: the address of the timers' web page (the `web` role, `seam-web`), with the token
/// that lets a browser in. The token is the role's, in a 0600 file of the configuration
/// directory; the port is the one seamd started the role with.
enum WebCommand {
    static let command = Command(
        "web", "the address of the timers' web page, with its token (the web role, enabled in seamd.json)",
        options: [.value("config-dir", "DIR", "where seamd.json and web-token are (default $XDG_CONFIG_HOME/seam)", complete: .directory),
                  Opt.json]) { _, args in
        try run(args)
    }

    /// The token file seam-web makes (32 random bytes as 43 URL-safe base64 characters).
    static func tokenPath(_ directory: String) -> String { FileSystem.join(directory, "web-token") }

    static func run(_ args: Arguments) throws {
        let directory = args.value("config-dir") ?? Environment.configDirectory
        let c = try connect(args, hello: false)
        let roles = try c.status()["roles"]?.arrayValue ?? []
        guard let web = roles.first(where: { $0["role"]?.stringValue == "web" }) else {
            throw CLIError("""
                the web page is not enabled: add "web": {"enabled": true} to "roles" in \(FileSystem.join(directory, "seamd.json")) \
                (and "port": N for a port other than 8620), then restart seamd (seam down; seam up)
                """)
        }
        let command = web["command"]?.arrayValue?.compactMap(\.stringValue) ?? []
        guard let i = command.firstIndex(of: "--port"), i + 1 < command.count, let port = Int(command[i + 1]) else {
            throw CLIError("seamd runs the web role without a --port: \(command.joined(separator: " "))")
        }
        guard web["pid"]?.int64Value != nil else {
            throw CLIError("the web role is not running (\(web["lastError"]?.stringValue ?? web["state"]?.stringValue ?? "stopped")); seam status says more")
        }
        let path = tokenPath(directory)
        let bytes: [UInt8]
        do { bytes = try FileSystem.read(path) } catch {
            throw CLIError("cannot read the web page's token at \(path) (\(error.message)); seam-web makes it when it starts")
        }
        let token = String(decoding: bytes, as: UTF8.self).trimmingSpaces
        guard token.count >= 32, token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw CLIError("\(path) does not hold a token; remove it and restart seamd, and seam-web makes another")
        }
        let url = "http://127.0.0.1:\(port)/?token=\(token)"
        if args.flag("json") {
            return output(.object(["url": .string(url), "port": .integer(Int64(port)), "token": .string(token)]))
        }
        print(url)
        if Terminal.stdoutIsTerminal {
            Terminal.error("open it in a browser on this machine; the page keeps the token in a cookie, so the address after the first visit is http://127.0.0.1:\(port)/")
        }
    }
}
