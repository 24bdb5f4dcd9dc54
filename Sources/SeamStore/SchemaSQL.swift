import SeamSchema

/// The SQL that lays out a model version's entities in a store file.
///
/// Tables are named after entities and columns after attributes, so
/// `sqlite3 Cloud.sqlite 'select name from Timer'` works. Tables are `STRICT` (SQLite checks
/// every value's type) and `WITHOUT ROWID` with `uuid` as the primary key (one B-tree lookup
/// per fetch by uuid). Identifiers come only from validated schemas and are quoted anyway.
public enum SchemaSQL {
    /// `"name"`, with embedded quotes doubled.
    public static func quote(_ identifier: String) -> String {
        "\"" + doubled(identifier, "\"") + "\""
    }

    private static func doubled(_ s: String, _ quote: Character) -> String {
        var out = ""
        for c in s {
            out.append(c)
            if c == quote { out.append(c) }
        }
        return out
    }

    /// A SQL literal for a schema default. Only used in DDL, where parameters are not allowed;
    /// strings are quoted with doubled single quotes, bytes as hex blobs.
    public static func literal(_ value: AttributeValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let i): return String(i)
        case .bool(let b): return b ? "1" : "0"
        case .double(let d), .date(let d): return doubleLiteral(d)
        case .string(let s), .uuid(let s), .json(let s): return "'" + doubled(s, "'") + "'"
        case .binary(let bytes): return "X'" + Hex.encode(bytes) + "'"
        }
    }

    /// A double exactly, bit for bit. Whole numbers below 10^15 are written as they are. Any
    /// other is an integer mantissa scaled by powers of two, each step exact: SQLite 3.40 reads some
    /// decimal texts one bit off (about 1 in 20,000 of Swift's shortest forms), and rows a
    /// migration fills must hold the default that new inserts bind. A parenthesised expression
    /// is a constant default in `CREATE TABLE`, but `ALTER TABLE … ADD COLUMN` takes none
    /// (`isPlainLiteral`).
    static func doubleLiteral(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) + ".0" }
        guard d.isFinite else { return "\(d)" }  // never a default: validation refuses them
        // d = mantissa × 2^exponent, the mantissa an integer of at most 53 bits.
        var exponent = Int(d.isNormal ? d.exponent : Double.leastNormalMagnitude.exponent) - Double.significandBitCount
        var mantissa = Int64(d.sign == .minus ? -1 : 1) * Int64((d.significandBitPattern | (d.isNormal ? 1 << 52 : 0)))
        while mantissa != 0, mantissa % 2 == 0, exponent < 0 {
            mantissa /= 2
            exponent += 1
        }
        // Scaled by powers of two (integers up to 2^62, exact as doubles), one at a time.
        var text = "(CAST(\(mantissa) AS REAL)"
        var left = abs(exponent)
        while left > 0 {
            let step = min(left, 62)
            text += (exponent < 0 ? " / " : " * ") + String(Int64(1) << step)
            left -= step
        }
        return text + ")"
    }

    /// Whether `literal(value)` is a literal `ALTER TABLE … ADD COLUMN` accepts as a default.
    public static func isPlainLiteral(_ value: AttributeValue) -> Bool { !literal(value).hasPrefix("(") }

    /// The column definition of one attribute, as `CREATE TABLE` and `ALTER TABLE ADD COLUMN` write it.
    public static func column(_ a: Attribute) -> String {
        var c = "\(quote(a.name)) \(a.type.sqlType)"
        if a.name == Entity.identity { c += " NOT NULL PRIMARY KEY" } else if !a.isOptional { c += " NOT NULL" }
        if let d = a.defaultValue, !d.isNull { c += " DEFAULT \(literal(d))" }
        return c
    }

    /// `CREATE TABLE` for `entity`.
    public static func createTable(_ entity: Entity, name: String? = nil) -> String {
        "CREATE TABLE \(quote(name ?? entity.name)) (\(entity.attributes.map(column).joined(separator: ", "))) WITHOUT ROWID, STRICT"
    }

    /// The name of an index or unique constraint's index, derived from what it covers.
    public static func indexName(_ entity: String, _ attributes: [String], unique: Bool) -> String {
        Entity.indexName(entity, attributes, unique: unique)
    }

    /// Every index and unique constraint of `entity`, by name, with its `CREATE [UNIQUE] INDEX`
    /// and the attributes it covers.
    public static func indexes(_ entity: Entity) -> [(name: String, sql: String, attributes: [String])] {
        func make(_ attributes: [String], unique: Bool) -> (String, String, [String]) {
            let name = indexName(entity.name, attributes, unique: unique)
            return (name, "CREATE \(unique ? "UNIQUE " : "")INDEX \(quote(name)) ON \(quote(entity.name))"
                        + "(\(attributes.map(quote).joined(separator: ", ")))", attributes)
        }
        return entity.uniqueConstraints.map { make($0.attributes, unique: true) } + entity.indexes.map { make($0.attributes, unique: false) }
    }

    /// `CREATE [UNIQUE] INDEX` for every index and unique constraint of `entity`.
    public static func createIndexes(_ entity: Entity) -> [String] { indexes(entity).map(\.sql) }

    /// Every statement that creates the entities of `version` held by `configuration`.
    public static func create(_ version: ModelVersion, configuration: String) -> [String] {
        version.entities(in: configuration).flatMap { [createTable($0)] + createIndexes($0) }
    }
}
