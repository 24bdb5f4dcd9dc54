import SeamSystem

/// For tests only: a point where the worker can be held, to make a race happen on purpose.
///
/// With `SEAM_SYNC_TEST_PAUSE=DIR` in the worker's environment, the point `NAME` holds while
/// `DIR/NAME.armed` exists: the worker writes `DIR/NAME.paused`, then waits (at most 60 s)
/// until `DIR/NAME.go` exists, removes both and goes on. Unset (always, outside tests), a
/// point costs one nil check.
struct TestPause {
    let directory: String

    static func fromEnvironment() -> TestPause? {
        guard let directory = Environment.value("SEAM_SYNC_TEST_PAUSE"), !directory.isEmpty else { return nil }
        return TestPause(directory: directory)
    }

    func callAsFunction(_ name: String) {
        let base = FileSystem.join(directory, name)
        guard FileSystem.exists(base + ".armed") else { return }
        try? FileSystem.writeAtomically([], to: base + ".paused")
        let deadline = WallClock.monotonic() + 60
        while !FileSystem.exists(base + ".go") && WallClock.monotonic() < deadline { Threads.sleep(0.01) }
        // Not paused any more before the go is used up: a test that sees `.paused` may go on.
        try? FileSystem.remove(base + ".paused")
        try? FileSystem.remove(base + ".go")
    }
}
