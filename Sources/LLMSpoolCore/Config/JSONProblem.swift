import Foundation

/// A Foundation JSON parse error as a position people can find: line and column.
enum JSONProblem {
    /// Foundation reports "around character N"; people want a line and a column. Used for
    /// files Foundation parses (the configuration).
    static func problem(_ error: Error, _ bytes: [UInt8]) -> RequestProblem {
        let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        var offset = bytes.count
        if let range = detail.range(of: #"character (\d+)"#, options: .regularExpression) {
            let digits = detail[range].split(separator: " ").last.flatMap { Int($0) }
            offset = min(digits ?? offset, bytes.count)
        }
        let (line, column) = RequestValidator.position(ofByte: offset, in: bytes)
        let reason = detail.hasSuffix(".") ? String(detail.dropLast()) : detail
        return RequestProblem(.invalidJSON, "the file is not valid JSON: \(reason)", line: line, column: column)
    }

}
