/// The scheduler's queued ids, in one first-in-first-out line per class of request: the
/// endpoints a request may start on (its dialect's api, and the endpoint it tries first
/// or is pinned to). A class whose head must wait (its endpoint full, cooling down, paused
/// by its provider or waiting for a connection) holds back only its own class: a Messages
/// request is not queued behind chat requests waiting for a full OpenAI endpoint. Across
/// classes, the earliest arrival goes first, and ids a person or a takeover put in front
/// go before every arrival.
struct ClassQueues: Sendable {
    /// The endpoints a request may start on, as far as the order of the queue is concerned.
    struct Key: Hashable, Sendable {
        var api: EndpointAPI
        /// The endpoint tried first (its index modulo the endpoint count).
        var first: Int
        var pinned: Bool
    }

    /// One class's line: ids put in front, then arrivals; each with its place in the
    /// order across classes.
    struct Line: Sendable {
        var front: [(id: String, order: UInt64)] = []
        var items: [(id: String, order: UInt64)] = []
        var head = 0

        var isEmpty: Bool { front.isEmpty && head >= items.count }

        /// Drops what is spent from the arrivals' start once it is most of the storage.
        mutating func compact() {
            if head > 1024 && head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            } else if head == items.count && head > 0 {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
        }
    }

    private(set) var lines: [Key: Line] = [:]
    private var order: UInt64 = 0

    mutating func append(_ id: String, key: Key, inFront: Bool) {
        order &+= 1
        if inFront { lines[key, default: Line()].front.append((id, order)) } else { lines[key, default: Line()].items.append((id, order)) }
    }

    /// The head of the line, among the classes not in `blocked`, that came first (any id
    /// put in front before every arrival); nil when every other class is empty. The id may
    /// no longer be waiting: the caller then removes it and asks again.
    func next(excluding blocked: Set<Key>) -> (id: String, key: Key)? {
        var bestFront: (id: String, key: Key, order: UInt64)?
        var bestItem: (id: String, key: Key, order: UInt64)?
        for (key, line) in lines where !blocked.contains(key) {
            if let first = line.front.first {
                if bestFront.map({ first.order < $0.order }) ?? true { bestFront = (first.id, key, first.order) }
            } else if line.head < line.items.count {
                let item = line.items[line.head]
                if bestItem.map({ item.order < $0.order }) ?? true { bestItem = (item.id, key, item.order) }
            }
        }
        if let bestFront { return (bestFront.id, bestFront.key) }
        return bestItem.map { ($0.id, $0.key) }
    }

    /// Removes the head of `key`'s line, which `next` returned.
    mutating func removeHead(of key: Key) {
        guard var line = lines[key] else { return }
        if !line.front.isEmpty { line.front.removeFirst() } else if line.head < line.items.count { line.head += 1 }
        line.compact()
        lines[key] = line.isEmpty ? nil : line
    }
}
