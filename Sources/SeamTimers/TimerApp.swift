import SeamSchema

/// The timer application's whole schema: the timer model and the sync metadata model.
public enum TimerApp {
    /// Both models, composed into the `Cloud` and `Local` store files.
    public static let schema: Schema = {
        do { return try Schema([TimerModel.history, SyncMetadataModel.history]) } catch {
            fatalError("invalid timer app schema: \(error)")
        }
    }()

    /// Which version of each model shipped together, oldest release first.
    ///
    /// A store written by release `r` holds `Timers` at `releases[r].timers` and
    /// `SyncMetadata` at `releases[r].syncMetadata`; fixtures are made from these pairs.
    public static let releases: [(timers: Int, syncMetadata: Int)] = [(1, 1), (2, 1), (3, 2), (4, 2), (5, 2), (6, 2), (7, 2)]
}

extension TimerApp {
    /// The versions of every model in the first release where `model` was at `version`.
    public static func release(where model: String, is version: Int) -> [String: Int]? {
        for r in releases {
            let map = [TimerModel.name: r.timers, SyncMetadataModel.name: r.syncMetadata]
            if map[model] == version { return map }
        }
        return nil
    }
}
