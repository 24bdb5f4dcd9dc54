import Foundation

/// The project's built executables (`seam-migrate`, `seam-fixture`, …), run as real processes.
///
/// `swift build --build-tests` builds them beside the test bundle, in the same products folder.
public enum Executables {
    public static let productsDirectory: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1, !FileManager.default.fileExists(atPath: url.appendingPathComponent("seam-migrate").path) {
            url = url.deletingLastPathComponent()
        }
        return url
    }()

    public static func path(_ name: String) -> String { productsDirectory.appendingPathComponent(name).path }

    public struct Result {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs `name` with `arguments` to completion and returns its exit status and output.
    @discardableResult
    public static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws -> Result {
        try runTool(path(name), arguments, environment: environment, input: input)
    }

    /// Runs the program at `executable` (a system tool, say) to completion.
    @discardableResult
    public static func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                               input: String? = nil) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let stdin = Pipe()
        p.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try p.run()
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Starts `name` and returns the running process (output discarded), for tests that kill it.
    public static func start(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path(name))
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }
}
