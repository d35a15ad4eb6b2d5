import Testing
@testable import LLMSpoolCore

/// The piece-by-piece body both lane sources stream: every buffer size gives the same bytes
/// in order, each piece is asked for once, the end stays the end, and a failure stays one.
@Suite struct LaneBodyPiecesTests {
    /// The whole body, read `size` bytes at a time, and what a read after it returned.
    func readAll(_ pieces: inout LaneBodyPieces, size: Int, _ piece: (Int) -> LaneBodyPieces.Piece) -> (bytes: [UInt8], after: Int) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: size)
        while true {
            let count = buffer.withUnsafeMutableBytes { pieces.read(into: $0, piece) }
            if count <= 0 {
                let after = buffer.withUnsafeMutableBytes { pieces.read(into: $0, piece) }
                #expect(count == after, "a read after the end or a failure answers the same")
                return (bytes, count)
            }
            bytes += buffer[0..<count]
        }
    }

    @Test func everyBufferSizeGivesThePiecesInOrder() {
        let source: [[UInt8]] = [[1, 2, 3], [], [4], [5, 6, 7, 8, 9], [10]]
        for size in 1...12 {
            var pieces = LaneBodyPieces()
            var asked: [Int] = []
            let (bytes, after) = readAll(&pieces, size: size) { index in
                asked.append(index)
                return index < source.count ? .bytes(source[index]) : .end
            }
            #expect(bytes == Array(1...10), "buffer of \(size)")
            #expect(after == 0 && pieces.failure == nil)
            // Each piece once; the end may be asked again by a later read.
            #expect(Array(asked.prefix(source.count)) == Array(0..<source.count))
            #expect(asked.dropFirst(source.count).allSatisfy { $0 == source.count })
        }
    }

    @Test func aFailureEndsTheBodyForGood() {
        var pieces = LaneBodyPieces()
        var asked: [Int] = []
        let (bytes, after) = readAll(&pieces, size: 2) { index in
            asked.append(index)
            return index == 0 ? .bytes([1, 2, 3]) : .failed("piece \(index) changed")
        }
        #expect(bytes == [1, 2, 3])
        #expect(after == -1)
        #expect(pieces.failure == "piece 1 changed")
        #expect(asked == [0, 1], "nothing is asked for once the body failed")
    }

    @Test func anEmptyBodyEndsAtOnce() {
        var pieces = LaneBodyPieces()
        let (bytes, after) = readAll(&pieces, size: 4) { _ in .end }
        #expect(bytes.isEmpty && after == 0 && pieces.failure == nil)
    }
}
