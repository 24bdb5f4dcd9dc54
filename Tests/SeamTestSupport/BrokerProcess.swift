import Foundation

/// A real `seamd` on a temporary store directory and socket, for integration tests.
public final class BrokerProcess {
    public let directory: TemporaryDirectory
    public let dataDirectory: String
    public let socketPath: String
    public let process: Process
    /// seamd's stderr: a file, so that it can be read at any time, as often as wanted.
    private let logPath: String

    /// Starts seamd and waits until its socket answers.
    public convenience init(arguments extra: [String] = [], dataDirectory: String? = nil, environment: [String: String] = [:]) throws {
        let directory = TemporaryDirectory("seamd")
        // Short: sockaddr_un holds 107 bytes.
        try self.init(arguments: extra, directory: directory, dataDirectory: dataDirectory ?? directory.file("data"),
                      socketPath: "/tmp/seamd-test-\(getpid())-\(UUID().uuidString.prefix(6))/seamd.sock", environment: environment)
    }

    /// Stops this seamd and starts another on the same store directory and socket path (what a
    /// client sees when seamd restarts).
    public func restarted() throws -> BrokerProcess {
        stop()
        ownsSocketDirectory = false
        return try BrokerProcess(arguments: arguments, directory: directory, dataDirectory: dataDirectory, socketPath: socketPath,
                                 environment: environment)
    }

    private let arguments: [String]
    private let environment: [String: String]
    private var ownsSocketDirectory = true

    private init(arguments extra: [String], directory: TemporaryDirectory, dataDirectory: String, socketPath: String,
                 environment: [String: String]) throws {
        self.directory = directory
        self.dataDirectory = dataDirectory
        self.socketPath = socketPath
        arguments = extra
        self.environment = environment
        process = Process()
        process.executableURL = URL(fileURLWithPath: Executables.path("seamd"))
        // Roles (the ticker) only where a test asks for them with --config: the others drive sessions themselves.
        let roles = extra.contains("--config") ? [] : ["--no-roles"]
        process.arguments = ["--data-dir", self.dataDirectory, "--socket", socketPath] + roles + extra
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        logPath = directory.file("seamd-\(UUID().uuidString.prefix(6)).log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if !process.isRunning { throw BrokerStartFailure(log: log) }
            if let fd = try? RawClient.connectFD(socketPath) {
                close(fd)
                return
            }
            usleep(20_000)
        }
        throw BrokerStartFailure(log: "seamd did not answer within 20 s")
    }

    /// What seamd wrote to stderr so far.
    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Sends SIGTERM and waits for exit; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if ownsSocketDirectory { try? FileManager.default.removeItem(atPath: (socketPath as NSString).deletingLastPathComponent) }
    }
}

public struct BrokerStartFailure: Error, CustomStringConvertible {
    public var log: String
    public var description: String { "seamd did not start: \(log)" }
}

/// A bare socket client that sends raw bytes, for tests of what a broken client can send.
public final class RawClient {
    public let fd: Int32

    public static func connectFD(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return fd
    }

    /// What waits for the socket to be readable (at most the milliseconds given; true when it is):
    /// poll, or a broker in this thread turning its loop (`EmbeddedBroker`).
    private let waitReadable: (Int32, Int32) -> Bool
    private let turnsBroker: Bool

    public init(_ path: String) throws {
        fd = try Self.connectFD(path)
        waitReadable = { fd, milliseconds in
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, milliseconds) > 0
        }
        turnsBroker = false
    }

    /// A client on `fd` (connected already), waiting with `wait`, which turns a broker in this thread.
    public init(fd: Int32, wait: @escaping (Int32, Int32) -> Bool) {
        self.fd = fd
        waitReadable = wait
        turnsBroker = true
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0, turnsBroker, errno == EAGAIN {
                _ = waitReadable(fd, 1)  // the broker reads what is waiting
                continue
            }
            if n <= 0 { return }
            offset += n
        }
    }

    public func send(_ text: String, nul: Bool = true) { send(Array(text.utf8) + (nul ? [0] : [])) }

    /// Closes the writing half only (`shutdown(SHUT_WR)`, as socat and shell pipes do): the
    /// broker reads end of file, and this client can still read.
    public func shutdownWriting() { _ = shutdown(fd, Int32(SHUT_WR)) }

    private var pending: [UInt8] = []

    /// Reads one NUL-terminated frame, or nil if the connection closed or `timeout` passed.
    public func readFrame(timeout: Double = 5) -> String? {
        readFrameBytes(timeout: timeout).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `readFrame`'s bytes. Only the bytes read since the last look are searched for the NUL,
    /// so a frame of tens of megabytes costs what reading it does.
    public func readFrameBytes(timeout: Double = 5) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var scanned = 0
        while true {
            let nul = pending.withUnsafeBufferPointer { b -> Int? in
                guard scanned < b.count, let p = memchr(b.baseAddress! + scanned, 0, b.count - scanned) else { return nil }
                return UnsafeRawPointer(p) - UnsafeRawPointer(b.baseAddress!)
            }
            if let nul {
                let frame = Array(pending[..<nul])
                pending.removeFirst(nul + 1)
                return frame
            }
            scanned = pending.count
            guard Date() < deadline else { return nil }
            guard waitReadable(fd, 100) else { continue }
            let n = read(fd, &chunk, chunk.count)
            if n < 0, errno == EAGAIN { continue }
            if n <= 0 { return nil }
            pending.append(contentsOf: chunk[0..<n])
        }
    }

    /// The frames that have arrived, without waiting (a client from `EmbeddedBroker`, whose
    /// socket does not block); `closed` is set once the broker has closed its end.
    public func availableFrames() -> (frames: [[UInt8]], closed: Bool) {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var closed = false
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n > 0 {
                pending.append(contentsOf: chunk[0..<n])
                continue
            }
            if n == 0 || (errno != EAGAIN && errno != EINTR) { closed = true }
            if n < 0, errno == EINTR { continue }
            break
        }
        var frames: [[UInt8]] = []
        while let nul = pending.firstIndex(of: 0) {
            frames.append(Array(pending[..<nul]))
            pending.removeFirst(nul + 1)
        }
        return (frames, closed)
    }

    /// Whether the broker closed this connection (read returns 0) within `timeout`.
    public func isClosed(timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            guard waitReadable(fd, 100) else { continue }
            let n = read(fd, &buffer, buffer.count)
            if n < 0, errno == EAGAIN { continue }
            if n <= 0 { return true }
        }
        return false
    }
}
