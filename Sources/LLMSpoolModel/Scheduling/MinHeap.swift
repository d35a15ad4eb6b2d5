/// A binary min-heap: the scheduler's timers (retries due, waits ending).
package struct MinHeap<Element>: Sendable where Element: Sendable {
    private var items: [Element] = []
    private let less: @Sendable (Element, Element) -> Bool

    package init(by less: @escaping @Sendable (Element, Element) -> Bool) {
        self.less = less
    }

    package var isEmpty: Bool { items.isEmpty }
    package var count: Int { items.count }
    package var min: Element? { items.first }

    package mutating func push(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    package mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && less(items[left], items[smallest]) { smallest = left }
            if right < items.count && less(items[right], items[smallest]) { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
