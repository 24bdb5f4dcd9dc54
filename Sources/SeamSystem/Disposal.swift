import Dispatch

/// Lets go of big values on another thread. Freeing a thousand row changes — each with its
/// strings and dictionaries — took the broker's loop 0.4 ms; dropped here, the loop only hands
/// the last reference over, and a background thread pays for the frees.
public enum Disposal {
    private static let queue = DispatchQueue(label: "seam.disposal", qos: .utility)

    /// Releases `value` on the disposal thread (the caller must hold no other reference to it,
    /// or this only moves a count).
    public static func release<Value: Sendable>(_ value: consuming Value) {
        let box = Box(value)
        queue.async { box.drop() }
    }

    private final class Box<Value: Sendable>: @unchecked Sendable {
        var value: Value?
        init(_ value: Value) { self.value = value }
        func drop() { value = nil }
    }
}
