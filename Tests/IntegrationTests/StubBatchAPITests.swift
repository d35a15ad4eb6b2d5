import Foundation
import LLMSpoolCore
import Testing

/// The stub's OpenAI Files and Batches API and Anthropic's Message Batches, driven by the
/// official openai and anthropic SDKs: what the background lane is tested against must be
/// what a real client accepts.
@Suite(.serialized) struct StubBatchAPITests {
    @Test func theOpenAISDKUploadsCreatesFindsByMetadataAndDownloadsThroughTheFaults() throws {
        if let missing = SDKJudge.missing {
            if SDKJudge.mustRun { Issue.record("\(missing)") }
            return
        }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "upload:500,upload:429,create:429,create:500,create:lost"])
        let lines = [
            ["custom_id": "q1", "method": "POST", "url": "/v1/chat/completions", "body": Harness.request("Hi")],
            ["custom_id": "q2", "method": "POST", "url": "/v1/chat/completions", "body": Harness.request("Hello")],
            ["custom_id": "q3", "method": "POST", "url": "/v1/chat/completions", "body": Harness.request("No", stub: ["status": 400])],
        ]
        let input = harness.root + "/input.jsonl"
        try Data(lines.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) + "\n" }.joined().utf8)
            .write(to: URL(fileURLWithPath: input))
        let script = URL(fileURLWithPath: SDKJudge.script).deletingLastPathComponent().appendingPathComponent("batch_client.py").path
        let run = try Harness.spawnAndWait([SDKJudge.python, script, harness.stubURL, input, harness.root, "g1", "2,3"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
        #expect(report["met"] as? [String] == ["upload 500", "upload 429", "create 429", "create 500", "create lost"])
        #expect((report["file"] as? [String: Any])?["purpose"] as? String == "batch")
        #expect((report["found"] as? [String])?.count == 1, "the lost create committed one batch, found by its metadata")
        #expect(report["cancelled"] as? String == "cancelled")

        try SDKJudge.expectParses("Batch", [harness.root + "/batch.json"])
        let batch = try harness.json(harness.root + "/batch.json")
        #expect(batch["status"] as? String == "completed")
        #expect(batch["request_counts"] as? [String: Int] == ["total": 3, "completed": 2, "failed": 1])
        var bodies: [String] = []
        var answered: [String: Int] = [:]
        for (name, file) in [("output", "/output.jsonl"), ("errors", "/errors.jsonl")] {
            let text = try String(contentsOfFile: harness.root + file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let response = try #require(object["response"] as? [String: Any])
                let id = try #require(object["custom_id"] as? String)
                answered[id] = response["status_code"] as? Int
                if name == "output" {
                    let path = harness.root + "/body-\(id).json"
                    try JSONSerialization.data(withJSONObject: try #require(response["body"])).write(to: URL(fileURLWithPath: path))
                    bodies.append(path)
                }
            }
        }
        #expect(answered == ["q1": 200, "q2": 200, "q3": 400])
        try SDKJudge.expectParses("ChatCompletion", bodies)
        let content = try harness.json(bodies[0])
        #expect(Harness.content(of: content)?.hasPrefix("Echo: H") == true)

        let port = try #require(UInt16(harness.stubURL.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let counts = try JSONSerialization.jsonObject(with: LoopbackGet.body(port: port, path: "/stub/batches")) as? [String: Any]
        #expect(counts?["creations"] as? [String: Int] == ["g1": 1, "g1-other": 1], "one creation per group, the lost one included")
    }

    @Test func theAnthropicSDKCreatesFindsByCustomIDsCancelsAndReadsResultsThroughTheFaults() throws {
        if let missing = SDKJudge.missing {
            if SDKJudge.mustRun { Issue.record("\(missing)") }
            return
        }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "create:429,create:500,create:lost"])
        let script = URL(fileURLWithPath: SDKJudge.script).deletingLastPathComponent().appendingPathComponent("anthropic_batch_client.py").path
        let base = String(harness.stubURL.dropLast("/v1".count))
        let run = try Harness.spawnAndWait([SDKJudge.python, script, base, harness.root, "g1", "3"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
        #expect(report["met"] as? [String] == ["create 429", "create 500", "create lost", "bearer 401"])
        #expect(report["listed"] as? Int == 2, "the other group's batch and the lost create's, one a page through after_id")
        #expect((report["found"] as? [String])?.count == 1, "the lost create's batch, found by its results' custom_ids")
        #expect(report["cancelling"] as? String == "canceling")
        let cancelled = report["cancelled"] as? [Any]
        #expect(cancelled?.first as? String == "ended")
        #expect(cancelled?.last as? Int == 1, "the cancelled batch's one request is canceled")

        let batch = try harness.json(harness.root + "/batch.json")
        #expect(batch["processing_status"] as? String == "ended")
        #expect(batch["request_counts"] as? [String: Int] == ["processing": 0, "succeeded": 1, "errored": 1, "canceled": 0, "expired": 1])
        #expect((batch["results_url"] as? String)?.hasSuffix("/results") == true)
        let text = try String(contentsOfFile: harness.root + "/results.jsonl", encoding: .utf8)
        var types: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            types[try #require(object["custom_id"] as? String)] = (object["result"] as? [String: Any])?["type"] as? String
        }
        #expect(types == ["g1-0": "succeeded", "g1-1": "errored", "g1-2": "expired"])
        try SDKJudge.expectParses("Message", [harness.root + "/message-0.json"])
        let message = try harness.json(harness.root + "/message-0.json")
        #expect(((message["content"] as? [[String: Any]])?.first?["text"] as? String)?.hasPrefix("Echo: Hi") == true)

        let port = try #require(UInt16(harness.stubURL.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let counts = try JSONSerialization.jsonObject(with: LoopbackGet.body(port: port, path: "/stub/batches")) as? [String: Any]
        #expect(counts?["creations"] as? [String: Int] == ["g1": 1, "g1x": 1, "g1-other": 1], "one creation per group, the lost one included")
        #expect(counts?["cancelled"] as? [String] == ["g1-other"])
    }
}
