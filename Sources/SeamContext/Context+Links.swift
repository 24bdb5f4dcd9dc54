import SeamSchema
import SeamStore

/// A link whose target row does not exist: what sync, or an older build, can leave behind.
public struct DanglingLink: Sendable, Hashable, CustomStringConvertible {
    public var entity: String
    public var uuid: String
    public var attribute: String
    public var target: String
    public var missing: String
    public var description: String { "\(entity) \(uuid): \(attribute) → \(target) \(missing), which does not exist" }
}

extension Context {
    /// Every link in every store that points at a row that is not there.
    public func danglingLinks() throws(ContextError) -> [DanglingLink] {
        var out: [DanglingLink] = []
        for (target, sources) in incoming.sorted(by: { $0.key < $1.key }) {
            for (source, link) in sources {
                let rows = try fetch(FetchRequest(source.name, where: "\(link.attribute) != nil", attributes: [link.attribute]))
                for row in rows {
                    guard let value = row[link.attribute].stringValue else { continue }
                    if try self.row(target, value) == nil {
                        out.append(DanglingLink(entity: source.name, uuid: row.uuid, attribute: link.attribute, target: target,
                                                missing: value))
                    }
                }
            }
        }
        return out
    }
}
