import Testing
@testable import LLMSpoolModel

@Suite struct RemoteIntentTests {
    let identity = FileIdentity(device: 2049, inode: 1 << 40, size: 812, modifiedNanoseconds: 1_700_000_000_123_456_789,
                                bornNanoseconds: 1_699_999_999_000_000_001, contentHash: 0xdead_beef_0123_4567)

    @Test func aRecordReadsBackAsItWasWritten() throws {
        let intent = RemoteIntent(group: "g-01_x", state: .polling, endpoint: "open \"ai\"", url: "/v1/chat/completions",
                                  createdAt: 1_796_000_000,
                                  members: [.init(id: "a", request: identity), .init(id: "tab\tand é", request: nil)],
                                  inputFileID: "file-1", batchID: "batch_1", remoteStatus: "in_progress")
        #expect(try RemoteIntent.decode(intent.encoded()) == intent)
        let bare = RemoteIntent(group: "g", endpoint: "e", url: "/v1/embeddings", createdAt: 0, members: [])
        #expect(try RemoteIntent.decode(bare.encoded()) == bare)
        #expect(try RemoteIntent.decode(bare.encoded()).inputFileID == nil)
    }

    @Test func everyStateSurvivesTheRecord() throws {
        for state in RemoteBatchState.allCases {
            let intent = RemoteIntent(group: "g", state: state, endpoint: "e", url: "/v1/chat/completions", createdAt: 5, members: [])
            #expect(try RemoteIntent.decode(intent.encoded()).state == state)
        }
    }

    @Test func aBrokenRecordIsAProblemNamedNotACrash() {
        let good = RemoteIntent(group: "g", endpoint: "e", url: "/v1/chat/completions", createdAt: 5,
                                members: [.init(id: "a", request: identity)]).encoded()
        for cut in 0..<good.count - 1 {
            #expect(throws: RemoteIntent.Problem.self) { try RemoteIntent.decode(Array(good.prefix(cut))) }
        }
        let cases: [(String, String)] = [
            ("[]", "not a JSON object"),
            (#"{"group":"../x","state":"intent","endpoint":"e","url":"u","created_at":1,"members":[]}"#, "no valid group"),
            (#"{"group":"g","state":"flying","endpoint":"e","url":"u","created_at":1,"members":[]}"#, "no known state"),
            (#"{"group":"g","state":"intent","endpoint":"e","url":"u","created_at":1.5,"members":[]}"#, "no created_at"),
            (#"{"group":"g","state":"intent","endpoint":"e","url":"u","created_at":99999999999999999999999,"members":[]}"#, "no created_at"),
            (#"{"group":"g","state":"intent","endpoint":"e","url":"u","created_at":1,"members":[{"id":"a","request":{"device":-1,"inode":1,"size":1,"mtime_ns":1}}]}"#,
             "member a has a broken request identity"),
            (#"{"group":"g","state":"intent","endpoint":"e","url":"u","created_at":1,"members":[{}]}"#, "member 0 has no id"),
        ]
        for (text, problem) in cases {
            #expect(throws: RemoteIntent.Problem(description: problem)) { try RemoteIntent.decode(Array(text.utf8)) }
        }
    }

    @Test func groupIDsAreSafeAsFileNamesAndMetadata() {
        #expect(RemoteIntent.isValidGroup("lane-20261201-abc_9"))
        #expect(!RemoteIntent.isValidGroup(""))
        #expect(!RemoteIntent.isValidGroup("a/b"))
        #expect(!RemoteIntent.isValidGroup(".hidden"))
        #expect(!RemoteIntent.isValidGroup(String(repeating: "a", count: 65)))
    }

    @Test func theSpoolNamesTheRecords() {
        let layout = SpoolLayout(root: "/s/")
        #expect(layout.remote == "/s/state/remote")
        #expect(layout.remoteIntent("g1") == "/s/state/remote/g1.json")
        #expect(layout.folders.contains(layout.remote))
    }
}
