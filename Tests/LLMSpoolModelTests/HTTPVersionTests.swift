import LLMSpoolModel
import Testing

@Suite struct HTTPVersionTests {
    @Test func theSettingsValuesAreTheThreeNamed() {
        #expect(HTTPVersion(setting: "auto") == .auto)
        #expect(HTTPVersion(setting: "1.1") == .http1_1)
        #expect(HTTPVersion(setting: "2") == .http2)
        for bad in ["", "2.0", "h2", "1", "AUTO", "1.0", "3"] { #expect(HTTPVersion(setting: bad) == nil, "\(bad)") }
        #expect(HTTPVersion.settingValues == "auto, 1.1, 2")
    }

    @Test func eachVersionOverTLSAndPlainHTTP() {
        #expect(HTTPVersion.auto.wire(https: true) == .http2OverTLS)
        #expect(HTTPVersion.auto.wire(https: false) == .http1_1)
        #expect(HTTPVersion.http1_1.wire(https: true) == .http1_1)
        #expect(HTTPVersion.http1_1.wire(https: false) == .http1_1)
        #expect(HTTPVersion.http2.wire(https: true) == .http2OverTLS)
        #expect(HTTPVersion.http2.wire(https: false) == .http2PriorKnowledge)
    }

    @Test func onlyAConnectionThatMayMultiplexIsWaitedFor() {
        #expect(HTTPVersion.auto.waitsForMultiplexing(https: true))
        #expect(!HTTPVersion.auto.waitsForMultiplexing(https: false))
        #expect(!HTTPVersion.http1_1.waitsForMultiplexing(https: true))
        #expect(!HTTPVersion.http1_1.waitsForMultiplexing(https: false))
        #expect(HTTPVersion.http2.waitsForMultiplexing(https: true))
        #expect(!HTTPVersion.http2.waitsForMultiplexing(https: false), "h2c: a connection per transfer")
        #expect(HTTPVersion.http2.connectionPerTransfer(https: false) && !HTTPVersion.http2.connectionPerTransfer(https: true))
        #expect(!HTTPVersion.auto.connectionPerTransfer(https: false))
    }
}
