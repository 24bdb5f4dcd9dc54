import Foundation

/// The newest generation of `DIR/backups/` that keeps `configuration`'s file: where a migration
/// or a restore put the original it replaced (generations are named by time, so they sort).
public func newestBackup(in dataDirectory: String, of configuration: String) -> String {
    let backups = dataDirectory + "/backups"
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: backups)) ?? []).sorted()
    for name in names.reversed() {
        let file = "\(backups)/\(name)/\(configuration).sqlite"
        if FileManager.default.fileExists(atPath: file) { return file }
    }
    return "\(backups)/(no generation keeps \(configuration).sqlite)"
}
