/// The `multipart/form-data` body of `POST /v1/files` for a group's input: a head (the
/// `purpose=batch` part and the file part's headers), the input lines, and a tail. The lines
/// are streamed between head and tail from the members' files, so the whole body's size is
/// known before it is sent (`CURLOPT_POSTFIELDSIZE_LARGE`) and it is never held in memory. Pure.
public struct LaneUploadBody: Sendable, Equatable {
    public let boundary: String
    public let head: [UInt8]
    public let tail: [UInt8]

    /// A delimiter is CRLF, `--` and the boundary; compact JSON lines hold no raw CR (a
    /// string escapes it), so no line can contain one, whatever text the requests carry.
    public init(group: String, filename: String? = nil) {
        boundary = "llmspool-" + group
        let name = filename ?? "\(group).jsonl"
        head = Array(("--\(boundary)\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(name)\"\r\n"
            + "Content-Type: application/jsonl\r\n\r\n").utf8)
        tail = Array("\r\n--\(boundary)--\r\n".utf8)
    }

    /// The request's `Content-Type` header value.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The body's size for input lines of `linesBytes` in all, or nil when it would not fit.
    public func size(linesBytes: Int) -> Int? {
        let (withHead, overflow) = linesBytes.addingReportingOverflow(head.count + tail.count)
        return overflow || linesBytes < 0 ? nil : withHead
    }
}
