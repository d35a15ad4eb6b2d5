import Testing
@testable import LLMSpoolModel

/// A misspelt setting or option names what was meant; an unrelated word names nothing.
@Suite struct NearestNameTests {
    let settings = ["concurrency", "connect_timeout_seconds", "idle_timeout_seconds", "request_timeout_seconds",
                    "max_attempts", "base_url", "api_key_env", "api_key_file", "leases", "lease_seconds", "log_level"]

    @Test(arguments: [
        ("concurency", "concurrency"),           // a letter missing
        ("concurrrency", "concurrency"),         // a letter too many
        ("concurrnecy", "concurrency"),          // two letters swapped
        ("max-attempts", "max_attempts"),        // - for _
        ("Max_Attempts", "max_attempts"),        // case
        ("base_uri", "base_url"),                // a letter wrong
        ("idle_timeout_second", "idle_timeout_seconds"),
    ])
    func aTypoNamesWhatWasMeant(typed: String, meant: String) {
        #expect(NearestName.suggestion(for: typed, among: settings) == meant)
    }

    @Test(arguments: ["model", "x", "", "temperature", "spool_folder", String(repeating: "a", count: 10_000)])
    func anUnrelatedNameNamesNothing(typed: String) {
        #expect(NearestName.suggestion(for: typed, among: settings) == nil)
    }

    /// Two names as near as each other: neither is offered, since either could be wrong.
    @Test func aTieNamesNothing() {
        #expect(NearestName.suggestion(for: "lease", among: ["leases", "leaser"]) == nil)
        #expect(NearestName.suggestion(for: "lease", among: ["leases", "lease_seconds"]) == "leases")
    }

    /// A short name allows one edit at most.
    @Test func shortNamesAllowOneEditAtMost() {
        #expect(NearestName.suggestion(for: "spol", among: ["spool"]) == "spool")
        #expect(NearestName.suggestion(for: "sxol", among: ["spool"]) == nil)
    }

    @Test func theDistanceIsATypistsDistance() {
        func distance(_ a: String, _ b: String) -> Int { NearestName.editDistance(Array(a.utf8), Array(b.utf8)) }
        #expect(distance("", "") == 0)
        #expect(distance("abc", "") == 3)
        #expect(distance("", "abc") == 3)
        #expect(distance("abc", "abc") == 0)
        #expect(distance("abc", "acb") == 1, "a swap is one edit")
        #expect(distance("kitten", "sitting") == 3)
        #expect(distance("ca", "abc") == 3, "optimal string alignment: no edit of a swapped pair")
    }

    /// The exact name typed is never "suggested" back (it is not a typo).
    @Test func anExactNameIsNoSuggestion() {
        #expect(NearestName.suggestion(for: "leases", among: settings) == nil)
    }
}
