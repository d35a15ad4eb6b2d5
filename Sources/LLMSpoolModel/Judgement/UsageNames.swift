/// The token counts of every dialect under common names, so that records, `status` and the
/// metrics can add them up across dialects: `input` (every prompt token, cached or not),
/// `output`, `cached_input` and `reasoning`. A table of the raw members each is read from,
/// not a branch per dialect: a dialect only reports its raw usage.
public enum UsageNames {
    public static let input = "input"
    public static let output = "output"
    public static let cachedInput = "cached_input"
    public static let reasoning = "reasoning"

    /// One common count: the first alternative whose members are present, each
    /// alternative the sum of its members (Anthropic's input is spread over three).
    struct Rule {
        var name: String
        var alternatives: [[String]]
    }

    /// Chat and completions, Responses, embeddings (`prompt_tokens` only) and Anthropic.
    /// Anthropic's `input_tokens` leave out the cached ones, OpenAI's include them: the
    /// Anthropic members are summed, and absent from an OpenAI usage, so one row serves both.
    static let table: [Rule] = [
        Rule(name: input, alternatives: [["prompt_tokens"], ["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]]),
        Rule(name: output, alternatives: [["completion_tokens"], ["output_tokens"]]),
        Rule(name: cachedInput, alternatives: [["prompt_tokens_details.cached_tokens"], ["input_tokens_details.cached_tokens"], ["cache_read_input_tokens"]]),
        Rule(name: reasoning, alternatives: [["completion_tokens_details.reasoning_tokens"], ["output_tokens_details.reasoning_tokens"]]),
    ]

    /// The raw top-level counts as they were, plus the common names that can be read from
    /// them; nested counts (`a.b`, as `AttemptJudge.counts` reads them) only feed the table.
    public static func normalised(_ raw: [String: Int]) -> [String: Int] {
        var result = raw.filter { !$0.key.contains(".") }
        for rule in table {
            for members in rule.alternatives where members.contains(where: { raw[$0] != nil }) {
                result[rule.name] = members.reduce(0) { TokenCount.sum($0, raw[$1] ?? 0) }
                break
            }
        }
        return result
    }
}
