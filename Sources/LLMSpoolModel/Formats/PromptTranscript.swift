/// The transcript of an answered prompt file: its front matter and conversation as the
/// person wrote them, then a `## assistant` section with the answer. Saved into
/// `outgoing` again with a new `## user` section at the end, it continues the conversation.
public enum PromptTranscript {
    public static func render(_ file: PromptFile, answer: String) -> [UInt8] {
        var text = file.frontMatter
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        if file.hasHeadings {
            text += trimmedTrailingBlankLines(file.body)
        } else {
            if !text.isEmpty { text += "\n" }
            text += "## user\n\n" + (file.messages.first?.text ?? "")
        }
        text += "\n\n## assistant\n\n" + trimmedTrailingBlankLines(answer) + "\n"
        return Array(text.utf8)
    }

    static func trimmedTrailingBlankLines(_ text: String) -> String {
        var text = Substring(text)
        while let last = text.last, last == "\n" || last == "\r" || last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
