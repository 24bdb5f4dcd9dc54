import SeamClient
import SeamCommandLine
import SeamProtocol
import SeamSystem
import SeamWatch

/// `seam watch`: the sessions, live. A query channel on `Session` feeds a `WatchBoard`; a tick
/// on each wall-clock second redraws the countdowns (no call to the broker: the channel says
/// what changed, the clock says how long is left). On a terminal it redraws in place on the
/// alternate screen, rings the bell as `--bell` says (each step, by default), highlights a
/// session when it finishes, and redraws to
/// the new size on SIGWINCH; otherwise it writes one plain line per event.
enum WatchCommand {
    static let command = Command("watch", "a live view of the sessions: countdowns, steps, rounds; rings the bell at each step (--bell)",
                                 options: [.flag("plain", "a line per change, not a view that redraws"),
                                           .value("bell", "steps|end|off", "when to ring: as each step ends (the default), as a session ends, or never",
                                                  complete: .words(["steps", "end", "off"]))]) { _, args in try await watch(args) }

    enum Event: Sendable {
        case update(SubscriptionUpdate)
        case tick
        case resize
        case quit
        case failed(String)
    }

    static func watch(_ args: Arguments) async throws {
        let bell = try args.value("bell").map { name in
            guard let bell = WatchBoard.Bell(rawValue: name) else {
                throw Arguments.UsageError("--bell is steps (each step a session moves to, and its end; the default), end or off, not '\(Terminal.printable(name))'")
            }
            return bell
        } ?? .steps
        let terminal = !args.flag("plain") && TerminalSize.isTerminal(1)
        let subscriber = try SeamSubscriber.connect(path: args.value("socket"))
        let (events, sink) = AsyncStream<Event>.makeStream()
        let signals = try Signals.pipe([Signals.interrupt, Signals.terminate, Signals.hangup, Signals.windowChange])
        try Threads.detach {
            var byte: [UInt8] = []
            while case .bytes = (try? UnixSocket.read(signals, into: &byte, max: 1)) ?? .closed {
                sink.yield(Int32(byte.removeLast()) == Signals.windowChange ? .resize : .quit)
            }
        }
        Task {
            do {
                for try await update in subscriber.subscribe(LiveQuery("Session", sort: "startedAt")) { sink.yield(.update(update)) }
                sink.yield(.failed("the broker ended the subscription; is seamd running? (seam up starts it)"))
            } catch let error as ClientError where error.remoteName != nil {
                sink.yield(.failed("seamd ended the live view: \(args.flag("verbose") ? "\(error)" : error.personMessage)"))  // not a broker gone: no hint to start one
            } catch {
                sink.yield(.failed("\(error); is seamd running? (seam up starts it)"))
            }
        }
        if terminal {
            Task {
                while true {
                    let now = WallClock.now()
                    try? await Task.sleep(for: .milliseconds(Int((now.rounded(.down) + 1 - now) * 1000) + 2))
                    sink.yield(.tick)
                }
            }
        }
        var screen = Screen(enabled: terminal)
        var board = WatchBoard(utcOffset: WallClock.utcOffset(at: WallClock.now()))
        screen.open()
        for await event in events {
            let now = WallClock.now()
            // Times of day in the zone's offset now: a change to or from summer time shows.
            board.utcOffset = WallClock.utcOffset(at: now)
            switch event {
            case .update(let update):
                let happened: [WatchBoard.Event]
                do { happened = try board.apply(update, now: now) } catch {
                    screen.close()
                    Terminal.fail("seam", "the live view lost track of the sessions (\(error)); run seam watch again")
                }
                if terminal {
                    if bell.rings(for: happened) { screen.bell() }
                    screen.draw(board, now: now)
                } else {
                    for e in happened { print("\(board.timeOfDay(now)) \(e.kind.rawValue): \(e.text)") }
                    Terminal.flushOutput()
                }
            case .tick:
                _ = board.expireHighlights(now: now)
                screen.draw(board, now: now)
            case .resize:
                screen.resize()
                screen.clear()
                screen.draw(board, now: now)
            case .quit:
                screen.close()
                Terminal.exit(0)
            case .failed(let message):
                screen.close()
                Terminal.fail("seam", message)
            }
        }
    }

    /// The terminal side: the alternate screen, the cursor, the size.
    struct Screen {
        let enabled: Bool
        var rows = 24
        var columns = 80

        init(enabled: Bool) {
            self.enabled = enabled
            resize()
        }

        mutating func resize() {
            guard enabled, let size = TerminalSize.of(1), size.rows > 0, size.columns > 0 else { return }
            rows = size.rows
            columns = size.columns
        }

        func clear() { if enabled { Descriptors.write(1, "\u{1B}[2J") } }

        func open() { if enabled { Descriptors.write(1, "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J") } }

        func close() { if enabled { Descriptors.write(1, "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l") } }

        func bell() { if enabled { Descriptors.write(1, "\u{07}") } }

        /// Writes every line over the last frame, clearing what each line no longer covers.
        func draw(_ board: WatchBoard, now: Double) {
            guard enabled else { return }
            let lines = board.lines(now: now, width: columns, height: rows).map { line in
                (line.highlighted ? "\u{1B}[7m\(line.text)\u{1B}[0m" : line.text) + "\u{1B}[K"
            }
            Descriptors.write(1, "\u{1B}[H" + lines.joined(separator: "\r\n") + "\u{1B}[J")
        }
    }
}
