/// The parts of a `multipart/form-data` body, as `POST /v1/files` receives it. The boundary
/// is read from the body's first line, so no header is needed.
struct StubMultipart {
    struct Part {
        var name: String
        var filename: String?
        var content: ArraySlice<UInt8>
    }

    static func parse(_ body: [UInt8]) -> [Part]? {
        guard let firstEnd = find([0x0D, 0x0A], in: body, from: 0), firstEnd > 2, body[0] == 0x2D, body[1] == 0x2D else { return nil }
        let delimiter = [0x0D, 0x0A] + Array(body[0..<firstEnd])
        var parts: [Part] = []
        var start = firstEnd + 2
        while true {
            guard let headEnd = find([0x0D, 0x0A, 0x0D, 0x0A], in: body, from: start) else { return nil }
            let head = String(decoding: body[start..<headEnd], as: UTF8.self)
            guard let end = find(delimiter, in: body, from: headEnd + 4) else { return nil }
            parts.append(Part(name: value(of: "name", in: head) ?? "", filename: value(of: "filename", in: head),
                              content: body[(headEnd + 4)..<end]))
            let after = end + delimiter.count
            // `--` after the delimiter closes the body.
            if after + 1 < body.count, body[after] == 0x2D, body[after + 1] == 0x2D { return parts }
            start = after + 2
            guard start < body.count else { return nil }
        }
    }

    private static func value(of key: String, in head: String) -> String? {
        guard let range = head.range(of: " \(key)=\"") ?? head.range(of: ";\(key)=\"") else { return nil }
        let rest = head[range.upperBound...]
        guard let close = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<close])
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard needle.count <= haystack.count, from <= haystack.count - needle.count else { return nil }
        var index = from
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
