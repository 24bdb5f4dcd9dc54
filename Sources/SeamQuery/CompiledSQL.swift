import SeamSchema

/// SQL text with `?` placeholders and the values to bind to them, in order.
///
/// The text is built only from fixed SQL and from identifiers of the checked schema (quoted);
/// every value a caller wrote — literal or parameter — is in `arguments`, never in `sql`.
public struct CompiledSQL: Sendable, Hashable, CustomStringConvertible {
    public var sql: String
    public var arguments: [AttributeValue]

    public init(sql: String, arguments: [AttributeValue]) {
        self.sql = sql
        self.arguments = arguments
    }

    public var description: String { "\(sql) -- \(arguments)" }

    /// `SELECT columns FROM entity [WHERE predicate] [ORDER BY sorting] [LIMIT n]`.
    ///
    /// `columns` default to every attribute in declaration order; a name that is not an attribute
    /// of `entity` is an `unknownAttribute` error (offset 0). Throws `entityMismatch` when the
    /// predicate or sorting was checked against another entity.
    public static func select(
        _ columns: [String]? = nil, from entity: Entity, where predicate: CheckedPredicate? = nil,
        orderBy sorting: Sorting? = nil, limit: Int? = nil
    ) throws(QueryError) -> CompiledSQL {
        let names = columns ?? entity.attributes.map(\.name)
        var list: [String] = []
        for name in names {
            guard let attribute = entity.attribute(name) else {
                throw QueryError(.unknownAttribute, at: 0, "\(entity.name) has no attribute '\(name)' to select")
            }
            list.append(Column(name: attribute.name, type: attribute.type).quoted)
        }
        var out = CompiledSQL(sql: "SELECT \(list.joined(separator: ", ")) FROM \(quotedTable(entity))", arguments: [])
        try out.append(predicate: predicate, sorting: sorting, limit: limit, entity: entity)
        return out
    }

    /// `SELECT count(*) FROM entity [WHERE predicate]`.
    public static func count(from entity: Entity, where predicate: CheckedPredicate? = nil) throws(QueryError)
        -> CompiledSQL
    {
        var out = CompiledSQL(sql: "SELECT count(*) FROM \(quotedTable(entity))", arguments: [])
        try out.append(predicate: predicate, sorting: nil, limit: nil, entity: entity)
        return out
    }

    private static func quotedTable(_ entity: Entity) -> String {
        Column(name: entity.name, type: .string).quoted
    }

    private mutating func append(
        predicate: CheckedPredicate?, sorting: Sorting?, limit: Int?,
        entity: Entity
    ) throws(QueryError) {
        if let predicate {
            guard predicate.entity.name == entity.name else {
                throw QueryError(
                    .entityMismatch, at: 0,
                    "the predicate was checked against \(predicate.entity.name), not \(entity.name)")
            }
            let condition = predicate.sql
            sql += " WHERE " + condition.sql
            arguments += condition.arguments
        }
        if let sorting {
            guard sorting.entityName == entity.name else {
                throw QueryError(
                    .entityMismatch, at: 0, "the sorting was checked against \(sorting.entityName), not \(entity.name)")
            }
            sql += " ORDER BY " + sorting.sql
        }
        if let limit {
            sql += " LIMIT ?"
            arguments.append(.integer(Int64(limit)))
        }
    }
}
