/// A request body the lane streams to libcurl: its size known before it is sent, its
/// bytes produced on demand, so that an upload of any size costs one chunk of memory.
protocol LaneBodySource: AnyObject {
    /// The body's size in bytes.
    var size: Int { get }
    /// Why producing the body failed, once it has (then `read` returns -1).
    var failure: String? { get }
    /// Copies the next bytes into `buffer`; 0 at the end, -1 on failure.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int
}
