/// The transcript of an answered prompt file: its front matter and conversation as the
/// person wrote them, then a `## assistant` section with the answer. Saved into
/// `outgoing` again with a new `## user` section at the end, it continues the conversation.
public enum PromptTranscript {
    public static func render(_ file: PromptFile, answer: String) -> [UInt8] {
        var text = file.frontMatter
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        var conversation: String
        if file.hasHeadings {
            conversation = trimmedTrailingBlankLines(file.body)
        } else {
            if !text.isEmpty { text += "\n" }
            conversation = "## user\n\n" + PromptFile.escapingHeadings(file.messages.first?.text ?? "")
        }
        // A code block left open would swallow the heading that follows it when the
        // transcript is read again: it is closed first.
        conversation += closingFence(conversation)
        // The answer is one turn whatever it says: a line of it like `## system` stays text.
        let reply = PromptFile.escapingHeadings(trimmedTrailingBlankLines(answer))
        text += conversation + "\n\n## assistant\n\n" + reply + closingFence(reply) + "\n"
        return Array(text.utf8)
    }

    /// A line closing the code block `text` leaves open, or "".
    static func closingFence(_ text: String) -> String {
        let open = PromptFile.splitLines(Array(text.utf8)).reduce(false) { open, line in PromptFile.isFence(line.text) ? !open : open }
        return open ? "\n```" : ""
    }

    static func trimmedTrailingBlankLines(_ text: String) -> String {
        var text = Substring(text)
        while let last = text.last, last == "\n" || last == "\r" || last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
