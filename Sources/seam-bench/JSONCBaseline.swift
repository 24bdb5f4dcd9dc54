import CJSONC
import SeamJSON

/// json-c, wrapped for the JSON benchmarks: the only file that calls it, every result checked.
///
/// SeamJSON does not use json-c (the Swift parser measured faster; see `JSONBenchmarks`); this
/// baseline is what it was measured against. A json-c tree is an `OpaquePointer?` (json-c spells
/// `null` as a null pointer) that its owner frees with `free(_:)`.
enum JSONCBaseline {
    /// Why json-c refused or failed.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A strict, UTF-8-validating json-c tokener, reused from message to message.
    final class Tokener {
        let raw: UnsafeMutablePointer<json_tokener>

        init() throws {
            guard let raw = json_tokener_new_ex(64) else { throw Failure(description: "json_tokener_new_ex failed") }
            self.raw = raw
            json_tokener_set_flags(raw, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8)
        }

        deinit { json_tokener_free(raw) }

        /// Parses one whole document into a tree the caller frees.
        func parse(_ bytes: [UInt8]) throws -> OpaquePointer? {
            json_tokener_reset(raw)
            let tree = bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    json_tokener_parse_ex(raw, chars.baseAddress, Int32(chars.count))
                }
            }
            let error = json_tokener_get_error(raw)
            guard error == json_tokener_success, json_tokener_get_parse_end(raw) == bytes.count else {
                JSONCBaseline.free(tree)
                throw Failure(description: "json-c: \(String(cString: json_tokener_error_desc(error)))")
            }
            return tree
        }
    }

    static func free(_ tree: OpaquePointer?) {
        if tree != nil { json_object_put(tree) }
    }

    // MARK: - json-c tree → JSON

    static func value(_ tree: OpaquePointer?) -> JSON {
        switch json_object_get_type(tree) {
        case json_type_null: return .null
        case json_type_boolean: return .bool(json_object_get_boolean(tree) != 0)
        case json_type_int: return .integer(json_object_get_int64(tree))
        case json_type_double: return .double(json_object_get_double(tree))
        case json_type_string:
            let length = Int(json_object_get_string_len(tree))
            guard let start = json_object_get_string(tree) else { return .string("") }
            return .string(String(decoding: UnsafeRawBufferPointer(start: start, count: length), as: UTF8.self))
        case json_type_array:
            return .array((0..<json_object_array_length(tree)).map { value(json_object_array_get_idx(tree, $0)) })
        default:
            return .object(object(tree))
        }
    }

    private static func object(_ tree: OpaquePointer?) -> JSONObject {
        var object = JSONObject()
        var iterator = json_object_iter_begin(tree)
        var end = json_object_iter_end(tree)
        while json_object_iter_equal(&iterator, &end) == 0 {
            if let name = json_object_iter_peek_name(&iterator) {
                object[String(cString: name)] = value(json_object_iter_peek_value(&iterator))
            }
            json_object_iter_next(&iterator)
        }
        return object
    }

    // MARK: - JSON → json-c tree → bytes

    /// A json-c tree for `value`, which the caller frees.
    static func tree(_ value: JSON) throws -> OpaquePointer? {
        switch value {
        case .null: return nil
        case .bool(let truth): return try made(json_object_new_boolean(truth ? 1 : 0))
        case .integer(let integer): return try made(json_object_new_int64(integer))
        case .double(let double): return try made(json_object_new_double(double))
        case .string(let string):
            var string = string
            return try string.withUTF8 { bytes in
                try bytes.withMemoryRebound(to: CChar.self) { chars in
                    try made(json_object_new_string_len(chars.baseAddress, Int32(chars.count)))
                }
            }
        case .array(let elements):
            let array = try made(json_object_new_array_ext(Int32(elements.count)))
            for element in elements {
                let child = try tree(element)
                guard json_object_array_add(array, child) == 0 else {
                    free(child)
                    free(array)
                    throw Failure(description: "json_object_array_add failed")
                }
            }
            return array
        case .object(let members):
            let object = try made(json_object_new_object())
            for (key, member) in members {
                let child = try tree(member)
                let added = json_object_object_add_ex(object, key, child, UInt32(JSON_C_OBJECT_ADD_KEY_IS_NEW))
                guard added == 0 else {
                    free(child)
                    free(object)
                    throw Failure(description: "json_object_object_add_ex failed")
                }
            }
            return object
        }
    }

    /// The compact text of a tree, as json-c writes it (`%.17g` doubles, no `\/` escapes).
    static func serialise(_ tree: OpaquePointer?) throws -> UnsafeRawBufferPointer {
        var length = 0
        let flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE
        guard let text = json_object_to_json_string_length(tree, flags, &length) else {
            throw Failure(description: "json_object_to_json_string_length failed")
        }
        return UnsafeRawBufferPointer(start: text, count: length)
    }

    private static func made(_ tree: OpaquePointer?) throws -> OpaquePointer? {
        guard let tree else { throw Failure(description: "json-c could not allocate an object") }
        return tree
    }
}
