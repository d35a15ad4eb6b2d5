/// Where each line of a batch file is: byte ranges and line numbers, never the bytes, so
/// a million-line file costs about 20 bytes a line in memory. Blank lines have no entry.
public struct BatchIndex: Sendable, Equatable {
    /// Each entry's first byte.
    public private(set) var starts: [Int] = []
    /// Each entry's end (its newline, or the end of the file).
    public private(set) var ends: [Int] = []
    /// Each entry's 1-based line number in the file.
    public private(set) var numbers: [Int32] = []

    public init() {}

    public var count: Int { starts.count }

    public mutating func append(_ range: Range<Int>, line: Int) {
        starts.append(range.lowerBound)
        ends.append(range.upperBound)
        numbers.append(Int32(clamping: line))
    }

    public func range(_ entry: Int) -> Range<Int> { starts[entry]..<ends[entry] }
    public func lineNumber(_ entry: Int) -> Int { Int(numbers[entry]) }
}
