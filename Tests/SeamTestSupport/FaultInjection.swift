import Foundation

/// A disk (or a process) that fails on cue: `Tests/Fixtures/fault-injection/faults.c`, built
/// with gcc for a test and preloaded into the processes it starts. The calls it fails, and for
/// which files, are named by its variables (`SEAM_FAIL_…_SUFFIX`); it fails them only while a
/// file exists.
public enum FaultInjection {
    /// Builds the library in `directory` and returns the environment that preloads it with
    /// `faults`, armed while the file `armed` exists.
    public static func environment(_ faults: [String: String], armed: String, in directory: TemporaryDirectory) throws
        -> [String: String]
    {
        let library = directory.file("faults.so")
        let built = try Executables.runTool("/usr/bin/gcc", [
            "-shared", "-fPIC", "-O1", "-o", library, RepositoryFiles.url("Tests/Fixtures/fault-injection/faults.c").path, "-ldl",
        ])
        guard built.status == 0 else { throw LibraryNotBuilt(message: built.stderr) }
        var environment = faults
        environment["LD_PRELOAD"] = library
        environment["SEAM_FAULT_ARMED"] = armed
        return environment
    }

    /// gcc refused the library: what it said.
    public struct LibraryNotBuilt: Error, CustomStringConvertible {
        public var message: String
        public var description: String { "cannot build the fault-injection library: \(message)" }
    }
}
