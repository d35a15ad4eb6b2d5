/// A body streamed piece by piece, one piece in memory at a time: what the upload's and the
/// Message Batch create's sources share. The source says what piece `n` is (its head, a
/// member's bytes read from its request file, its tail); this hands the bytes to libcurl
/// and asks for the next piece when one is used up.
struct LaneBodyPieces {
    /// What the source gives for a piece.
    enum Piece {
        case bytes([UInt8])
        /// Producing the piece failed: the body fails with this reason.
        case failed(String)
        /// No piece is left: the body is whole.
        case end
    }

    /// Why producing the body failed, once it has.
    private(set) var failure: String?
    private var chunk: [UInt8] = []
    private var offset = 0
    private var next = 0

    /// Copies the next bytes into `buffer`, asking `piece` for piece 0, 1, ... as the one
    /// before is used up; 0 at the end, -1 on failure (and on every call after one).
    mutating func read(into buffer: UnsafeMutableRawBufferPointer, _ piece: (Int) -> Piece) -> Int {
        if failure != nil { return -1 }
        while offset == chunk.count {
            switch piece(next) {
            case .bytes(let bytes):
                chunk = bytes
                offset = 0
                next += 1
            case .failed(let reason):
                failure = reason
                return -1
            case .end:
                return 0
            }
        }
        let count = min(buffer.count, chunk.count - offset)
        chunk.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<(offset + count)]))
        }
        offset += count
        return count
    }
}
