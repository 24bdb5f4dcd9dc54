/// A growable stack of values that the parser fills while a container is open and empties into
/// one exactly sized array when it closes.
///
/// Reused from container to container (and from string to string, for the escape buffer), it
/// spares every array the allocations of growing one element at a time. It owns its memory and
/// deinitialises whatever is left in it when it goes away, so an error thrown mid-parse leaks
/// nothing. Noncopyable, so that the parser reaches it in place, without reference counting.
struct ParseStack<Element>: ~Copyable {
    private var storage: UnsafeMutablePointer<Element>
    private var capacity: Int
    /// The number of elements on the stack.
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage = .allocate(capacity: self.capacity)
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    /// The element at `position`, which must be below `count`.
    subscript(position: Int) -> Element {
        storage[position]
    }

    @inline(__always)
    mutating func push(_ element: consuming Element) {
        if count == capacity { grow(to: count + 1) }
        (storage + count).initialize(to: element)
        count += 1
    }

    /// Pushes a copy of `elements`.
    mutating func push(contentsOf elements: UnsafeBufferPointer<Element>) {
        guard let source = elements.baseAddress else { return }
        if count + elements.count > capacity { grow(to: count + elements.count) }
        (storage + count).initialize(from: source, count: elements.count)
        count += elements.count
    }

    /// Moves the elements from `start` on into a new array and leaves `start` elements.
    mutating func popArray(from start: Int) -> [Element] {
        let moved = count - start
        let array = [Element](unsafeUninitializedCapacity: moved) { buffer, initialized in
            if let destination = buffer.baseAddress { destination.moveInitialize(from: storage + start, count: moved) }
            initialized = moved
        }
        count = start
        return array
    }

    /// Drops every element from `start` on.
    mutating func removeAll(from start: Int = 0) {
        (storage + start).deinitialize(count: count - start)
        count = start
    }

    /// The elements from `start` on, valid until the stack next changes.
    func buffer(from start: Int = 0) -> UnsafeBufferPointer<Element> {
        UnsafeBufferPointer(start: storage + start, count: count - start)
    }

    private mutating func grow(to needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        let newStorage = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        newStorage.moveInitialize(from: storage, count: count)
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }
}
