import CSeamSystem

/// How the C library's allocator serves this process.
public enum Memory {
    /// For a short-lived process that builds large arrays and dictionaries (a listing of 100,000
    /// rows): every thread allocates from the one heap, which grows 32 MiB at a time, and blocks
    /// up to 32 MiB come from it rather than from maps of their own. Left to the defaults, the
    /// thread that ran the listing grew a heap of its own a few pages at a time (an `mprotect`
    /// each, a tenth of its time) and each large array was mapped, faulted in and unmapped anew;
    /// `seam ls --json` over 100,000 timers took 0.96 s instead of 0.87. Memory freed stays
    /// with the process until it exits, which a long-running one must not do.
    public static func preferOneGrowingHeap() {
        _ = seam_one_growing_heap(32 << 20)
    }
}
