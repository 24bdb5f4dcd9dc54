import CSeamSystem
#if canImport(Glibc)
import Glibc
#endif

/// Threads for the few blocking loops outside the broker (a client's reader).
public enum Threads {
    private final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread. The thread starts with every signal blocked, so
    /// that signals reach the thread that waits for them (seamd's signalfd, a handler on main).
    public static func detach(_ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("pthread_create", errno: rc)
        }
        pthread_detach(thread)
    }

    /// Asks the kernel to let the calling thread in promptly when it wakes, in short slices
    /// (EEVDF's per-thread slice, Linux 6.12 and later): for threads that answer clients and
    /// run briefly — the broker's loop, its readers of short reads. On two busy cores a reader
    /// woken for a 0.1 ms fetch otherwise waited 2–4 ms for a thread running a default slice.
    /// Kernels without it ignore the request (or refuse it); nothing else changes.
    @discardableResult
    public static func requestShortSlices(microseconds: Int = 100) -> Bool {
        seam_request_slice(UInt64(microseconds) * 1000) == 0
    }

    /// Lowers the calling thread's scheduling priority by `niceness` (1–19): work that should
    /// yield to the threads that answer clients (a reader running a long query).
    public static func lowerPriorityOfThisThread(by niceness: Int32) {
        // On Linux a nice value belongs to each thread, and PRIO_PROCESS with id 0 is the caller's.
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, min(19, current + niceness))
    }

    /// The CPUs this process may run on.
    public static var processorCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Sleeps for `seconds`.
    public static func sleep(_ seconds: Double) {
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

/// A counting semaphore (POSIX `sem_t`): a thread sleeps in `wait` until another `post`s. Both
/// are safe from any thread; `post` is even safe from a signal handler.
public final class Semaphore: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>

    public init(_ value: UInt32 = 0) {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, value)
    }

    public func post() { sem_post(semaphore) }

    /// Sleeps until the count is above zero, then takes one.
    public func wait() { while sem_wait(semaphore) != 0 && errno == EINTR {} }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }
}

/// One thread that runs the work it is given, in order: for work that must leave the caller's
/// thread at once and often (a big save's commit), where starting a thread each time would add
/// its start to every wait. The thread starts with the first work, in short slices.
public final class WorkerThread: @unchecked Sendable {
    private let jobs = Mailbox<@Sendable () -> Void>()
    private let wake = Semaphore()
    private var started = false

    public init() {}

    /// Runs `work` on the thread, after what was given before. Throws when no thread could start.
    /// Called from one thread only (the owner's: the broker's loop).
    public func run(_ work: @escaping @Sendable () -> Void) throws(SystemError) {
        if !started {
            try Threads.detach { [self] in
                Threads.requestShortSlices()
                while true {
                    wake.wait()
                    for job in jobs.take() { job() }
                }
            }
            started = true
        }
        jobs.post(work)
        wake.post()
    }
}
