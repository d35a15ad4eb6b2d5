import Testing
@testable import LLMSpoolCore

@Suite struct SpoolNamingTests {
    @Test(arguments: [
        ("abc.json", RequestName.Kind.request(id: "abc")),
        ("a.b.json", .request(id: "a.b")),
        (".abc.json", .ignored),
        (".abc.json.tmp", .ignored),
        ("abc.json~", .ignored),
        ("abc.json.swp", .ignored),
        (".abc.json.swx", .ignored),
        ("4913", .ignored),
        ("#abc.json#", .ignored),
        ("abc.tmp", .ignored),
        ("notes.log", .ignored), ("notes.txt", .request(id: "notes")), ("notes.md", .request(id: "notes")),
        ("abc", .ignored),
    ])
    func classifiesNames(name: String, kind: RequestName.Kind) {
        #expect(RequestName.classify(name) == kind)
    }

    @Test func errorRecordNamesAreReserved() {
        guard case .unusable(let reason) = RequestName.classify("x.error.json") else {
            Issue.record("x.error.json must not be accepted as a request")
            return
        }
        #expect(reason.contains(".error.json"))
    }

    @Test func layoutNamesEveryFile() {
        let layout = SpoolLayout(root: "/var/spool/llm/")
        #expect(layout.root == "/var/spool/llm")
        #expect(layout.request("a") == "/var/spool/llm/outgoing/a.json")
        #expect(layout.partial("a") == "/var/spool/llm/incoming/a.partial")
        #expect(layout.result("a") == "/var/spool/llm/incoming/a.json")
        #expect(layout.rawStream("a") == "/var/spool/llm/incoming/a.sse")
        #expect(layout.failedRequest("a") == "/var/spool/llm/failed/a.json")
        #expect(layout.errorRecord("a") == "/var/spool/llm/failed/a.error.json")
        #expect(SpoolLayout.temporary(for: "/x/y/a.json") == "/x/y/.a.json.tmp")
        #expect(RequestName.classify("a.json.tmp") == .ignored, "temporaries are never taken for requests")
    }
}
