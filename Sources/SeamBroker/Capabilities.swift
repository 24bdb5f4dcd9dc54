import SeamJSON
import SeamProtocol

/// What a client may touch: the entities it reads and the entities it writes (writing one
/// includes reading it). Plugins declare theirs in `Hello`; the broker holds them to it.
///
/// | client | reads | writes |
/// |---|---|---|
/// | `cli`, and the roles seamd starts (`ticker`, …) | every entity | every entity but the sync worker's own |
/// | a plugin that declared nothing | nothing | nothing |
/// | a client that declared `{"reads": […], "writes": […]}` | those, and what it writes | those |
struct Capabilities: Equatable, Sendable {
    /// Nil: every entity.
    var reads: Set<String>?
    /// Nil: every entity.
    var writes: Set<String>?

    static let everything = Capabilities(reads: nil, writes: nil)
    static let nothing = Capabilities(reads: [], writes: [])

    func mayRead(_ entity: String) -> Bool {
        (reads?.contains(entity) ?? true) || mayWrite(entity)
    }

    func mayWrite(_ entity: String) -> Bool { writes?.contains(entity) ?? true }

    /// `{"reads": [...], "writes": [...]}` from Hello; every name must be an entity in `known`,
    /// and none in `writes` may be `reserved` (the sync worker's own, `Hello.workerOwned`).
    static func parse(_ json: JSON, known: (String) -> Bool, reserved: Set<String> = []) -> Result<Capabilities, VarlinkError> {
        guard let object = json.objectValue else { return .failure(.invalidParameter("capabilities")) }
        var out = Capabilities(reads: [], writes: [])
        for key in object.keys where key != "reads" && key != "writes" {
            return .failure(.invalidRequest("capabilities has 'reads' and 'writes', not '\(key)'", field: "capabilities.\(key)"))
        }
        for key in ["reads", "writes"] {
            guard let value = object[key], !value.isNull else { continue }
            guard let items = value.arrayValue, items.count <= 1_000 else { return .failure(.invalidParameter("capabilities.\(key)")) }
            var names: Set<String> = []
            for item in items {
                guard let name = item.stringValue else { return .failure(.invalidParameter("capabilities.\(key)")) }
                guard known(name) else {
                    return .failure(.invalidRequest("no entity named '\(name)'", field: "capabilities.\(key)"))
                }
                if key == "writes", reserved.contains(name) {
                    return .failure(.invalidRequest("\(name) is the sync worker's own: only seamd's sync role writes it "
                                                    + "(declare it in capabilities.reads to read it)", field: "capabilities.writes"))
                }
                names.insert(name)
            }
            if key == "reads" { out.reads = names } else { out.writes = names }
        }
        return .success(out)
    }

    /// As `Status` shows it: a sorted list, or null for every entity.
    var json: JSONObject {
        func list(_ s: Set<String>?) -> JSON { s.map { .array($0.sorted().map(JSON.string)) } ?? .null }
        return ["reads": list(reads), "writes": list(writes)]
    }

    static func describe(_ s: Set<String>?) -> String {
        guard let s else { return "every entity" }
        return s.isEmpty ? "nothing" : s.sorted().joined(separator: ", ")
    }
}
