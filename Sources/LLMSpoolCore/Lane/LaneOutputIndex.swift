import Glibc

/// Where each member's line is in a remote batch's downloaded output and error files,
/// found by reading them once in chunks: the files stay on disk, only offsets are held
/// (a 50,000-line output costs the index, not its bodies).
struct LaneOutputIndex {
    struct Place {
        var file: Int
        var offset: Int
        var length: Int
    }

    let paths: [String]
    private(set) var places: [String: Place] = [:]
    /// Lines that could not be read, with their file and line number, for the log.
    private(set) var problems: [String] = []

    init(paths: [String]) throws {
        self.paths = paths
        for (index, path) in paths.enumerated() {
            var offset = 0
            var lineNumber = 0
            try LaneOutputIndex.forEachLine(path: path) { line in
                lineNumber += 1
                defer { offset += line.count + 1 }
                guard !line.isEmpty else { return }
                do {
                    let read = try LaneOutputLine.read(line)
                    // The first line of an id counts; a repeated one is the provider's mistake.
                    if places[read.customID] == nil { places[read.customID] = Place(file: index, offset: offset, length: line.count) }
                } catch {
                    problems.append("\(path) line \(lineNumber): \(error)")
                }
            }
        }
    }

    /// The line of `id`, read back from its file.
    func line(of id: String) throws -> [UInt8]? {
        guard let place = places[id] else { return nil }
        let file = try FileDescriptor.open(paths[place.file], O_RDONLY | O_NOFOLLOW)
        return try Syscall.preadAll(file.rawValue, count: place.length, at: place.offset, path: paths[place.file])
    }

    /// Calls `body` with each line of the file, without its newline; a line is held whole
    /// only while it is handed over.
    static func forEachLine(path: String, _ body: ([UInt8]) throws -> Void) throws {
        var pending: [UInt8] = []
        try FileReader.forEachChunk(path: path) { chunk in
            var start = 0
            for (index, byte) in chunk.enumerated() where byte == 0x0A {
                pending.append(contentsOf: chunk[start..<index])
                try body(pending)
                pending.removeAll(keepingCapacity: true)
                start = index + 1
            }
            pending.append(contentsOf: chunk[start...])
        }
        if !pending.isEmpty { try body(pending) }
    }
}
