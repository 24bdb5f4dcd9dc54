import SeamStore

/// One migration run's life as a state machine: the worker's calls, its exit and what the broker
/// found of its copies go in; what the broker is to do comes out. Pure: the broker closes and
/// reopens stores, verifies and swaps files, and answers calls (`MigrationCoordinator`).
///
/// ```
///   building ── Report ──────────────▶ building (its progress)
///   building ── Finished ────────────▶ verifying      verify the copies (off the loop)
///   building ── Failed, or the worker ends ──▶ ended   end: failed (copies removed, originals back)
///   verifying ── the copies verify ──▶ swapping       swap them in
///   verifying ── they do not ────────▶ ended          end: failed; tell the worker why
///   swapping ── swapped ─────────────▶ ended          end: done (stores reopened as changed); tell the worker
///   swapping ── the swap could not begin ──▶ ended    end: failed; tell the worker
///   swapping ── stopped part way ────▶ ended          end: the stores stay closed with their copies; tell the worker
/// ```
///
/// Once the worker has said Finished or Failed its calls are refused and its exit is no failure.
struct MigrationLifecycle: Sendable {
    enum State: Sendable, Equatable {
        /// The worker builds the copies and reports.
        case building
        /// It said Finished: its copies are being verified.
        case verifying
        /// They verified: they are being swapped in.
        case swapping
        case ended
    }

    enum Event: Sendable {
        /// The worker's `Report`.
        case report(MigrationProgress)
        /// The worker's `Finished`: its copies are built.
        case finished
        /// The worker's `Failed`, with its message.
        case failed(String)
        /// The worker's process ended (or never started): how.
        case workerEnded(String)
        /// What verifying the copies found: nil when they verified.
        case verified(failure: String?)
        /// The swap's outcome.
        case swapped(backups: [String])
        case swapRefused(String)
        case swapStoppedPartWay(String)
    }

    /// How a run ends.
    enum Ending: Sendable, Equatable {
        /// Migrated: the stores reopen as changed files; `backups` keeps the originals.
        case done(backups: [String])
        /// Not migrated: the copies are removed and the originals serve at their old versions.
        case failed(String)
        /// The swap stopped part way: the stores stay closed, with their copies, until a person
        /// (or the next start) finishes it.
        case unfinishedSwap(String)
    }

    enum Action: Sendable, Equatable {
        /// Say the new progress (the closed stores' reason, the watchers).
        case progressed
        /// Verify the copies, and say `verified` with what was found.
        case verifyCopies
        /// Swap the verified copies in, and say how that went.
        case swap
        case end(Ending)
        /// Answer the worker's `Finished` (held until now): the backups, or why it failed.
        case answerWorker(Result<[String], Refusal>)
    }

    struct Refusal: Error, Sendable, Equatable { var message: String }

    private(set) var state = State.building
    private(set) var progress: MigrationProgress

    init(firstStore: String) { progress = MigrationProgress(phase: .preparing, configuration: firstStore) }

    /// Whether the worker's calls are still taken (it has said neither Finished nor Failed).
    var takesWorkerCalls: Bool { state == .building }

    mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.building, .report(let p)):
            progress = p
            return [.progressed]
        case (.building, .finished):
            state = .verifying
            progress.phase = .verifying
            return [.verifyCopies]
        case (.building, .failed(let message)):
            state = .ended
            return [.end(.failed("seam-migrate failed: " + (message.isEmpty ? "(it gave no reason)" : message)))]
        case (.building, .workerEnded(let how)):
            state = .ended
            return [.end(.failed("seam-migrate ended before it finished: \(how)"))]
        case (.verifying, .verified(let failure?)):
            state = .ended
            let message = "the worker's copy was refused: \(failure)"
            return [.end(.failed(message)), .answerWorker(.failure(Refusal(message: message)))]
        case (.verifying, .verified(nil)):
            state = .swapping
            progress.phase = .swapping
            return [.swap]
        case (.swapping, .swapped(let backups)):
            state = .ended
            progress.phase = .done
            return [.end(.done(backups: backups)), .answerWorker(.success(backups))]
        case (.swapping, .swapRefused(let why)):
            state = .ended
            let message = "the verified copies could not be swapped in: \(why); the stores are served as they were"
            return [.end(.failed(message)), .answerWorker(.failure(Refusal(message: message)))]
        case (.swapping, .swapStoppedPartWay(let why)):
            state = .ended
            let message = "the swap stopped part way (\(why)); the stores stay closed with their copies kept "
                + "until `seam migrate` (or the next start of seamd) finishes the swap"
            return [.end(.unfinishedSwap(message)), .answerWorker(.failure(Refusal(message: message)))]
        case (.verifying, .workerEnded), (.swapping, .workerEnded), (.ended, .workerEnded):
            return []  // it had concluded: its exit is no failure
        default:
            // The worker's calls after it concluded are refused before they get here; anything
            // else is out of order and changes nothing.
            return []
        }
    }
}
