/// One line of the input file uploaded for a group: OpenAI's Batch input line, with the
/// member's id as its `custom_id` and the request's body copied from its file in place
/// between a prefix and a suffix, so the file is streamed and never held whole. Pure.
public enum LaneInputLine {
    /// The bytes before the body: `{"custom_id":…,"method":"POST","url":…,"body":`.
    public static func prefix(customID: String, url: String) -> [UInt8] {
        Array(#"{"custom_id":"#.utf8) + JSONWriter.quoted(customID) + Array(#","method":"POST","url":"#.utf8)
            + JSONWriter.quoted(url) + Array(#","body":"#.utf8)
    }

    /// The bytes after the body; a body's own newlines are JSON whitespace, which the
    /// line's end must not be, so the caller sends the body compacted when it has any.
    public static let suffix: [UInt8] = Array("}\n".utf8)

    /// The line's size in the input file, for the grouper's byte limit.
    public static func size(customID: String, url: String, bodyBytes: Int) -> Int {
        prefix(customID: customID, url: url).count + bodyBytes + suffix.count
    }
}
