/// The prompt file `llmspool ask` writes for a one-line question: front matter with the
/// settings given (quoted, so that any text stays a string), then the question.
public enum AskPrompt {
    public static func text(question: String, model: String?, system: String?) -> String {
        var text = "---\n"
        if let model { text += "model: " + quoted(model) + "\n" }
        if let system { text += "system: " + quoted(system) + "\n" }
        // One question, one user message, whatever its lines say (`## system` stays text).
        let body = PromptFile.escapingHeadings(question)
        return text + "---\n" + body + (body.hasSuffix("\n") ? "" : "\n")
    }

    /// A YAML double-quoted scalar; JSON's string escapes are YAML's too.
    static func quoted(_ value: String) -> String {
        var out: [UInt8] = []
        JSONValue.writeString(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
