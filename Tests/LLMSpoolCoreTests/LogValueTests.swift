import Foundation
import Synchronization
import Testing
@testable import LLMSpoolCore

/// JSON log values keep their types: a number written alone is a number.
@Suite struct LogValueTests {
    func jsonLine(_ fields: KeyValuePairs<String, LogValue>) throws -> [String: Any] {
        let lines = Mutex<[String]>([])
        let logger = Logger(format: .json, sink: { line in lines.withLock { $0.append(line) } })
        logger.info("m", fields)
        let line = try #require(lines.withLock { $0.first })
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func aValueAloneKeepsItsType() throws {
        let count = 3
        let seconds = 1.25
        let object = try jsonLine(["count": "\(count)", "seconds": "\(seconds)", "flag": "\(true)", "big": "\(UInt64.max)"])
        #expect((object["count"] as? NSNumber)?.intValue == 3 && !(object["count"] is String))
        #expect((object["seconds"] as? NSNumber)?.doubleValue == 1.25)
        #expect(object["flag"] as? Bool == true && !(object["flag"] is String))
        #expect(object["big"] as? String == "\(UInt64.max)", "past Int64 it stays exact, as text")
    }

    @Test func textAroundAValueOrAStringIsAString() throws {
        let id = "007"
        let object = try jsonLine(["id": LogValue(id), "mixed": "x\(3)", "literal": "12", "nan": "\(Double.nan)", "error": "\(SystemError(errno: 2, call: "open", path: "/p"))"])
        #expect(object["id"] as? String == "007", "an id of digits is an id, not a number")
        #expect(object["mixed"] as? String == "x3")
        #expect(object["literal"] as? String == "12")
        #expect(object["nan"] as? String == "nan", "JSON has no NaN")
        #expect((object["error"] as? String)?.contains("open") == true)
    }

    @Test func textLogsPrintTheSameText() throws {
        let lines = Mutex<[String]>([])
        let logger = Logger(format: .text, sink: { line in lines.withLock { $0.append(line) } })
        logger.info("m", ["count": "\(3)", "seconds": "\(0.5)", "name": "a b"])
        #expect(lines.withLock { $0 } == [#"info: m count=3 seconds=0.5 name="a b""#])
    }
}

/// Endpoint names from the config go into label values escaped as the exposition format says.
@Suite struct MetricsLabelTests {
    @Test func labelValuesAreEscaped() {
        #expect(Metrics.labelValue(#"a"b\c"# + "\nd") == #"a\"b\\c\nd"#)
        let metrics = Metrics()
        metrics.attempt(endpoint: "x\"y", result: "2xx", sent: 1, received: 2, firstByteSeconds: nil, totalSeconds: 0.1)
        #expect(metrics.render().contains(#"llmspool_endpoint_attempts_total{endpoint="x\"y",result="2xx"} 1"#))
    }

    @Test func resultLabelsAreFewWhateverTheStatus() {
        #expect(AttemptEnding.response(status: 204).metricsLabel == "2xx")
        #expect(AttemptEnding.response(status: 599).metricsLabel == "5xx")
        #expect(AttemptEnding.response(status: 999_999).metricsLabel == "other-status")
        #expect(AttemptEnding.response(status: -1).metricsLabel == "other-status")
    }
}
