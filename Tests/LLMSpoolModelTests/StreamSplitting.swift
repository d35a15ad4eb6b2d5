@testable import LLMSpoolModel

/// Feeds a whole SSE stream to an assembler the way the transfer engine does: in pieces
/// cut where the test says, with the held text taken off (spilled) after every piece when
/// asked. Returns the verdict and the result document as the finisher would write it.
enum StreamSplitting {
    struct Outcome: Equatable {
        var verdict: String
        var document: [UInt8]?
    }

    static func assemble(_ assembler: any StreamAssembling, _ stream: [UInt8], cuts: [Int], spill: Bool) -> Outcome {
        var assembler = assembler
        var parser = SSEParser()
        var written: [UInt8] = []
        var spilled = false
        var start = 0
        for end in cuts + [stream.count] where end >= start {
            stream[start..<end].withUnsafeBytes { bytes in parser.feedRaw(bytes) { assembler.consume($0) } }
            start = end
            if spill && assembler.heldContentCount > 0 {
                if !spilled { written += assembler.contentHead }
                spilled = true
                written += assembler.takeContent()
            }
        }
        parser.finishRaw { assembler.consume($0) }
        switch assembler.verdict() {
        case .complete(let completion):
            return Outcome(verdict: "complete", document: written + completion.head + completion.content + completion.tail)
        case .providerError(let message, _):
            return Outcome(verdict: "provider-error: \(message)", document: nil)
        case .incomplete:
            return Outcome(verdict: "incomplete", document: nil)
        case .malformed:
            return Outcome(verdict: "malformed", document: nil)
        }
    }

    /// The outcome of the stream fed whole, which every split must give again: cut once at
    /// every byte, and in single bytes, each with and without spilling.
    static func sameAtEverySplit(_ make: () -> any StreamAssembling, _ stream: [UInt8]) -> (whole: Outcome, differing: [String]) {
        let whole = assemble(make(), stream, cuts: [], spill: false)
        var differing: [String] = []
        for cut in 0...stream.count {
            for spill in [false, true] where assemble(make(), stream, cuts: [cut], spill: spill) != whole {
                differing.append("cut at \(cut), spill \(spill)")
            }
        }
        for spill in [false, true] where assemble(make(), stream, cuts: Array(0..<stream.count), spill: spill) != whole {
            differing.append("single bytes, spill \(spill)")
        }
        return (whole, differing)
    }
}
