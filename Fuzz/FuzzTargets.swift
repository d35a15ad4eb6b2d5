// libFuzzer entry point for llmspool's parsers. One binary, four targets, chosen with
// LLMSPOOL_FUZZ_TARGET=sse|validator|config|json. Each target also checks an invariant that
// must hold for every input, so that a wrong answer is a finding, not only a crash.
import Foundation

private let target = ProcessInfo.processInfo.environment["LLMSPOOL_FUZZ_TARGET"] ?? "sse"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    switch target {
    case "sse": fuzzSSE(bytes)
    case "validator": fuzzValidator(bytes)
    case "config": fuzzConfig(bytes)
    case "json": fuzzJSON(bytes)
    default: fatalError("unknown LLMSPOOL_FUZZ_TARGET \(target)")
    }
    return 0
}

/// Any split of a stream must give the same events as the whole; the assembler must
/// reach a verdict on whatever the parser gives it.
private func fuzzSSE(_ bytes: [UInt8]) {
    func events(_ chunks: [ArraySlice<UInt8>]) -> [SSEParser.Event] {
        var parser = SSEParser()
        var out: [SSEParser.Event] = []
        for chunk in chunks { parser.feed(chunk) { out.append($0) } }
        parser.finish { out.append($0) }
        return out
    }
    let whole = events([bytes[...]])
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let split = events([bytes[..<cut], bytes[cut...]])
    precondition(whole == split, "the split at \(cut) changed the events")
    var assembler = StreamAssembler()
    for event in whole { assembler.consume(event) }
    if case .complete(let result) = assembler.verdict() {
        precondition((try? JSONSerialization.jsonObject(with: Data(result.document))) != nil, "an assembled result must be JSON")
    }
}

/// What the raw reader accepts, Foundation must accept too (the reader is stricter only
/// about trailing commas, which Foundation lets pass), and every string it finds must
/// decode to what Foundation decodes.
private func fuzzJSON(_ bytes: [UInt8]) {
    guard let value = try? RawJSON.parse(bytes) else { return }
    let foundation = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    precondition(foundation != nil, "RawJSON accepted what Foundation refuses")
    if case .object(let members, _) = value, let object = foundation as? [String: Any] {
        for member in members {
            guard case .string(let escaped) = value[member.key], let expected = object[member.key] as? String else { continue }
            let decoded = bytes.withUnsafeBytes { RawJSON.decodeString(UnsafeRawBufferPointer(rebasing: $0[escaped])) }
            precondition(decoded == expected, "a string decoded differently from Foundation")
        }
    }
}

/// The validator must never crash, and must accept only what Foundation can parse as an
/// object with a string model and an array of messages.
private func fuzzValidator(_ bytes: [UInt8]) {
    switch RequestValidator.validate(bytes) {
    case .success(let summary):
        let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        precondition(object?["model"] as? String == summary.model, "accepted a request without its model")
        precondition(object?["messages"] is [Any], "accepted a request without messages")
        if let brace = summary.usageSplice {
            let spliced = Array(bytes[...brace]) + Array(#""stream_options":{"include_usage":true},"#.utf8) + Array(bytes[(brace + 1)...])
            precondition((try? JSONSerialization.jsonObject(with: Data(spliced))) != nil, "the usage splice broke the JSON")
        }
    case .failure(let problem):
        precondition(!problem.message.isEmpty, "a refusal must say why")
    }
}

/// The config parser must never crash, and every refusal must name its source.
private func fuzzConfig(_ bytes: [UInt8]) {
    do {
        let config = try Config.parse(bytes, source: "fuzz.json")
        precondition(config.concurrency >= 1, "concurrency below 1 was accepted")
        _ = try? config.resolvedEndpoints(environment: [:])
    } catch let error as ConfigError {
        precondition(error.message.contains("fuzz.json") || error.message.contains("endpoint"), "an error without its source: \(error.message)")
    } catch {
        preconditionFailure("an unexpected error type: \(error)")
    }
}
