/// "Did you mean" for a mistyped command or option: the known words nearest to what was typed.
public enum Suggestions {
    /// ` (did you mean 'timer'?)`, or empty when nothing known is near enough: at most two edits
    /// (one for words of four letters or fewer), an adjacent swap counting as one.
    public static func didYouMean(_ typed: String, among known: [String]) -> String {
        let near = nearest(typed, among: known)
        guard !near.isEmpty else { return "" }
        let quoted = near.map { $0.hasPrefix("-") ? $0 : "'\($0)'" }
        return " (did you mean \(quoted.count == 1 ? quoted[0] : quoted.dropLast().joined(separator: ", ") + " or " + quoted.last!)?)"
    }

    /// The known words at the least distance from `typed`, within the bound, in their order.
    public static func nearest(_ typed: String, among known: [String]) -> [String] {
        let bare = typed.split(separator: "=", maxSplits: 1).first.map(String.init) ?? typed
        let core = { (s: String) in String(s.drop { $0 == "-" }) }
        let bound = core(bare).count <= 4 ? 1 : 2
        let scored = Set(known).map { ($0, distance(core(bare).lowercased(), core($0).lowercased())) }.filter { $0.1 <= bound && $0.0 != bare }
        guard let best = scored.map(\.1).min() else { return [] }
        let chosen = Set(scored.filter { $0.1 == best }.map(\.0))
        var seen = Set<String>()
        return known.filter { chosen.contains($0) && seen.insert($0).inserted }
    }

    /// Edits (insert, delete, replace, swap two adjacent) from `a` to `b` (optimal string alignment).
    public static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty || y.isEmpty { return max(x.count, y.count) }
        var d = Array(repeating: Array(repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[x.count][y.count]
    }
}
