import Testing
@testable import LLMSpoolModel

/// A lane step as the log names it: words and the provider's ids, never Swift's own
/// description of an enum (`download(outputFileID: Optional("file-1"), …)`).
@Suite struct RemoteBatchStepNameTests {
    @Test func eachStepHasAPlainName() {
        typealias Step = RemoteBatchMachine.Step
        #expect(Step.download(outputFileID: "file-1", errorFileID: nil).name == "download output file-1")
        #expect(Step.download(outputFileID: nil, errorFileID: "file-2").name == "download errors file-2")
        #expect(Step.list(after: nil).name == "list")
        #expect(Step.list(after: "batch_9").name == "list after batch_9")
        #expect(Step.inspect(batchID: "msgbatch_1").name == "inspect msgbatch_1")
        let all: [Step] = [.upload, .create, .poll, .split, .publish, .cancel, .list(after: "x"), .inspect(batchID: "y"),
                           .download(outputFileID: "o", errorFileID: "e")]
        for step in all { #expect(!step.name.contains("(") && !step.name.contains("Optional"), "\(step.name)") }
    }
}
