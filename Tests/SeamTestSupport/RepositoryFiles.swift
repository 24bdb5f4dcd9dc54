import Foundation

/// Paths of files committed in the repository, found from this source file's location.
public enum RepositoryFiles {
    public static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public static func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }

    public static func text(_ relative: String) throws -> String {
        try String(contentsOf: url(relative), encoding: .utf8)
    }
}
