/// A prompt file read: Markdown or plain text with optional YAML front matter between
/// `---` lines, and a body that is one user message or, with role headings (`## user`,
/// `## assistant`, `## system`, any case), a conversation in that order. Pure: bytes and
/// a YAML reader in, the file's parts or the first problem with its line and column out.
public struct PromptFile: Sendable, Equatable {
    /// One turn of the conversation.
    public struct Message: Sendable, Equatable {
        public enum Role: String, Sendable, CaseIterable {
            case system, user, assistant
        }

        public var role: Role
        public var text: String
        /// The line of its heading (or of the body's start when the body has none).
        public var line: Int

        public init(role: Role, text: String, line: Int) {
            self.role = role
            self.text = text
            self.line = line
        }
    }

    public var settings: PromptSettings
    public var messages: [Message]
    /// The front matter as written, `---` lines included, or "" when the file has none.
    public var frontMatter: String
    /// The body as written, after the front matter.
    public var body: String
    /// Whether the body used role headings.
    public var hasHeadings: Bool

    /// Reads a prompt file.
    public static func parse(_ bytes: [UInt8], yaml: YAMLReader) -> Result<PromptFile, RequestProblem> {
        let content = bytes.starts(with: RequestValidator.byteOrderMark) ? Array(bytes.dropFirst(3)) : bytes
        if let bad = RequestValidator.firstInvalidUTF8(content) {
            let (line, column) = RequestValidator.position(ofByte: bad, in: content)
            return .failure(RequestProblem(.notUTF8, "the file is not UTF-8 (invalid byte at offset \(bad))", line: line, column: column))
        }
        if let nul = content.firstIndex(of: 0) {
            let (line, column) = RequestValidator.position(ofByte: nul, in: content)
            return .failure(RequestProblem(.invalidPrompt, "the file holds a NUL byte; a prompt file is text", line: line, column: column))
        }
        let lines = splitLines(content)
        var bodyStart = 0
        var frontMatter = ""
        var tree: YAMLNode?
        if let first = lines.first, trimmedEnd(first.text) == "---" {
            guard let close = lines.indices.dropFirst().first(where: { ["---", "..."].contains(trimmedEnd(lines[$0].text)) }) else {
                return .failure(RequestProblem(.invalidFrontMatter, "the front matter opened here is never closed by a \"---\" line", line: 1, column: 1))
            }
            let inner = lines[1..<close].map(\.raw).joined()
            frontMatter = lines[0...close].map(\.raw).joined()
            switch yaml(Array(inner.utf8)) {
            case .success(let node):
                tree = node?.shifted(by: 1)
            case .failure(let problem):
                return .failure(RequestProblem(.invalidFrontMatter, "the front matter is not valid YAML: \(problem.message)",
                                               line: problem.line + 1, column: problem.column))
            }
            bodyStart = close + 1
        }
        let settings: PromptSettings
        switch PromptSettings.read(tree) {
        case .success(let read): settings = read
        case .failure(let problem): return .failure(problem)
        }
        let bodyLines = Array(lines[bodyStart...])
        let body = bodyLines.map(\.raw).joined()
        return conversation(bodyLines, firstLine: bodyStart + 1).map { messages, headings in
            PromptFile(settings: settings, messages: messages, frontMatter: frontMatter, body: body, hasHeadings: headings)
        }
    }

    struct Line {
        /// The line with its ending.
        var raw: String
        /// Without its ending.
        var text: String
    }

    static func splitLines(_ bytes: [UInt8]) -> [Line] {
        var lines: [Line] = []
        var start = 0
        // A file without a single LF ends its lines with CR alone (classic Mac editors):
        // read as one line, its front matter was not seen and the file "named no model".
        let separator: UInt8 = bytes.contains(0x0A) || !bytes.contains(0x0D) ? 0x0A : 0x0D
        for (index, byte) in bytes.enumerated() where byte == separator {
            let raw = String(decoding: bytes[start...index], as: UTF8.self)
            var end = index
            if separator == 0x0A, end > start, bytes[end - 1] == 0x0D { end -= 1 }
            lines.append(Line(raw: raw, text: String(decoding: bytes[start..<end], as: UTF8.self)))
            start = index + 1
        }
        if start < bytes.count {
            let text = String(decoding: bytes[start...], as: UTF8.self)
            lines.append(Line(raw: text, text: text.hasSuffix("\r") ? String(text.dropLast()) : text))
        }
        return lines
    }

    /// A line with nothing to read: spaces, tabs and carriage returns only (a lone `\r`
    /// would otherwise count as text, and vanish when the transcript writes it with `\n`).
    static func isBlank(_ line: String) -> Bool {
        line.unicodeScalars.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" }
    }

    static func trimmedEnd(_ text: String) -> String {
        var text = Substring(text)
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return String(text)
    }

    /// The role a heading line names, or nil when the line is not a role heading.
    public static func role(ofHeading line: String) -> Message.Role? {
        let text = trimmedEnd(line)
        guard text.hasPrefix("##") else { return nil }
        let rest = text.dropFirst(2)
        guard let first = rest.first, first == " " || first == "\t" else { return nil }
        let word = rest.drop(while: { $0 == " " || $0 == "\t" })
        return Message.Role(rawValue: word.lowercased())
    }

    /// Whether a line is a role heading with backslashes before it: text that would read as
    /// a heading, escaped by `escapingHeadings`; it reads back with one backslash less.
    /// Counted, not recursed: a line of a million backslashes is a hostile file's or
    /// answer's to write.
    static func isEscapedHeading(_ line: String) -> Bool {
        guard line.hasPrefix("\\") else { return false }
        return role(ofHeading: String(line.drop(while: { $0 == "\\" }))) != nil
    }

    /// `text` (a message's) with each line outside a code block that would read as a role
    /// heading, or as an escaped one, given one more backslash: written into a prompt file,
    /// it reads back as this very text, in one message. Without it a model's answer with a
    /// line `## system` came back, once the transcript was continued, as a system message.
    public static func escapingHeadings(_ text: String) -> String {
        var inFence = false
        // Split on the LF byte, as the reader splits: as Characters, "\r\n" is one, and a
        // heading after a CR stayed glued to the line before it, unescaped.
        return text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).map { part -> String in
            let line = String(decoding: part, as: UTF8.self)
            if isFence(line) { inFence.toggle(); return line }
            guard !inFence, role(ofHeading: line) != nil || isEscapedHeading(line) else { return line }
            return "\\" + line
        }.joined(separator: "\n")
    }

    /// Lines that open or close a fenced code block: headings inside one are text.
    static func isFence(_ line: String) -> Bool {
        let text = line.drop(while: { $0 == " " })
        return text.hasPrefix("```") || text.hasPrefix("~~~")
    }

    static func conversation(_ lines: [Line], firstLine: Int) -> Result<([Message], Bool), RequestProblem> {
        var headings: [(index: Int, role: Message.Role)] = []
        var escaped = Set<Int>()
        var inFence = false
        for (index, line) in lines.enumerated() {
            if isFence(line.text) { inFence.toggle(); continue }
            if !inFence, let role = role(ofHeading: line.text) { headings.append((index, role)) }
            if !inFence, isEscapedHeading(line.text) { escaped.insert(index) }
        }
        func text(_ range: Range<Int>) -> String {
            // A heading written as text (`escapingHeadings`) reads back as it was.
            var slice = range.map { escaped.contains($0) ? String(lines[$0].text.dropFirst()) : lines[$0].text }
            while let first = slice.first, isBlank(first) { slice.removeFirst() }
            while let last = slice.last, isBlank(last) { slice.removeLast() }
            return slice.joined(separator: "\n")
        }
        guard let firstHeading = headings.first else {
            let whole = text(0..<lines.count)
            guard !whole.isEmpty else {
                return .failure(RequestProblem(.invalidPrompt, "the prompt is empty: write the question after the front matter",
                                               line: firstLine, column: 1))
            }
            let start = lines.firstIndex(where: { !isBlank($0.text) }) ?? 0
            return .success(([Message(role: .user, text: whole, line: firstLine + start)], false))
        }
        if let stray = lines[0..<firstHeading.index].firstIndex(where: { !isBlank($0.text) }) {
            return .failure(RequestProblem(.invalidPrompt, "text before the first role heading; put it under a \"## user\" heading, "
                + "or leave out every heading to send the whole text as one message", line: firstLine + stray, column: 1))
        }
        var messages: [Message] = []
        for (position, heading) in headings.enumerated() {
            let end = position + 1 < headings.count ? headings[position + 1].index : lines.count
            let content = text((heading.index + 1)..<end)
            let line = firstLine + heading.index
            guard !content.isEmpty else {
                return .failure(RequestProblem(.invalidPrompt, "the \"## \(heading.role.rawValue)\" section is empty", line: line, column: 1))
            }
            messages.append(Message(role: heading.role, text: content, line: line))
        }
        guard messages.contains(where: { $0.role != .system }) else {
            return .failure(RequestProblem(.invalidPrompt, "the conversation has only system sections; add a \"## user\" section",
                                           line: firstLine + firstHeading.index, column: 1))
        }
        return .success((messages, true))
    }
}
