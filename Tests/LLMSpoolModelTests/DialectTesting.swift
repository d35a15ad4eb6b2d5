@testable import LLMSpoolModel

/// The set-up the dialect tests share: the dialect their url names, and a body wrapped
/// in a batch envelope for that url, as the validator receives it.
protocol DialectTesting {
    static var url: String { get }
}

extension DialectTesting {
    var dialect: any Dialect { DialectRegistry.dialect(url: Self.url)! }

    func envelope(_ body: String) -> [UInt8] { Array(#"{"url":"\#(Self.url)","body":\#(body)}"#.utf8) }

    /// The problem the validator finds with `body`; nil when it finds none.
    func problem(_ body: String) -> RequestProblem? {
        guard case .failure(let problem) = RequestValidator.validate(envelope(body)) else { return nil }
        return problem
    }
}
