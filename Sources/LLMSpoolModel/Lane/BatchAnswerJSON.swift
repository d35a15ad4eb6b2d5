/// What the readers of the Batches and Message Batches APIs' answers and output lines share: the
/// root object, and an integer member read from the raw bytes.
enum BatchAnswerJSON {
    /// Why an answer has no root object; its description reads after "the answer is".
    struct RootProblem: Error, CustomStringConvertible {
        let description: String
    }

    /// The root of `bytes`, which must be a JSON object; read as deep as a batch's output
    /// line (`BatchOutputLine.maximumDepth`), so that an answer as deep as a live one may be
    /// comes back through the lane too.
    static func object(_ bytes: [UInt8]) throws(RootProblem) -> RawJSON.Value {
        let root: RawJSON.Value
        do {
            root = try bytes.withUnsafeBytes { buffer throws(RawJSON.SyntaxError) in try RawJSON.parse(buffer, maximumDepth: BatchOutputLine.maximumDepth) }
        } catch {
            throw RootProblem(description: "not JSON: \(error)")
        }
        guard case .object = root else { throw RootProblem(description: "not a JSON object") }
        return root
    }

    /// A JSON number that is an Int; nil for anything else, a number past Int's range included.
    /// One of a batch's `request_counts`: a negative one, which no provider means, is none.
    static func count(_ value: RawJSON.Value?, _ bytes: [UInt8]) -> Int {
        max(0, integer(value, bytes) ?? 0)
    }

    static func integer(_ value: RawJSON.Value?, _ bytes: [UInt8]) -> Int? {
        guard case .number(let range)? = value else { return nil }
        return Int(String(decoding: bytes[range], as: UTF8.self))
    }
}
