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

    /// A record as the daemon wrote it before `request_files` (each member's identity inline):
    /// a restart after an upgrade reads it as it was.
    @Test func aRecordOfTheEarlierFormReadsAsItWas() throws {
        let text = #"{"group":"g1","state":"polling","endpoint":"batchy","api":"openai","url":"/v1/chat/completions","created_at":1796000000,"#
            + #""input_file_id":"file-1","batch_id":"batch_1","output_file_id":null,"error_file_id":null,"remote_status":"in_progress","#
            + "\"members\":[\n"
            + #"{"id":".b.jsonl.0","request":{"device":2049,"inode":1099511627776,"size":812,"mtime_ns":1700000000123456789,"btime_ns":1699999999000000001,"fnv1a":"deadbeef01234567"}},"#
            + "\n" + #"{"id":"solo","request":{"device":2049,"inode":7,"size":9,"mtime_ns":10}},"#
            + "\n" + #"{"id":"bare"}"# + "\n]}\n"
        let intent = try RemoteIntent.decode(Array(text.utf8))
        #expect(intent == RemoteIntent(group: "g1", state: .polling, endpoint: "batchy", api: .openai, url: "/v1/chat/completions",
                                       createdAt: 1_796_000_000,
                                       members: [.init(id: ".b.jsonl.0", request: identity),
                                                 .init(id: "solo", request: FileIdentity(device: 2049, inode: 7, size: 9, modifiedNanoseconds: 10)),
                                                 .init(id: "bare", request: nil)],
                                       inputFileID: "file-1", batchID: "batch_1", remoteStatus: "in_progress"))
    }

    @Test func aBatchFilesIdentityIsWrittenOnceForAllItsLines() throws {
        let other = FileIdentity(device: 1, inode: 2, size: 3, modifiedNanoseconds: 4)
        var members = (0..<1000).map { RemoteIntent.Member(id: ".b.jsonl.\($0)", request: identity) }
        members += [.init(id: "solo", request: other), .init(id: "bare", request: nil), .init(id: ".b.jsonl.1000", request: identity)]
        let intent = RemoteIntent(group: "g", state: .uploaded, endpoint: "e", url: "/v1/chat/completions", createdAt: 5, members: members)
        let bytes = intent.encoded()
        #expect(try RemoteIntent.decode(bytes) == intent)
        let text = String(decoding: bytes, as: UTF8.self)
        // One entry per run of members sharing a file: the batch, the lone request, the batch again.
        #expect(text.components(separatedBy: "\"inode\"").count - 1 == 3)
        #expect(bytes.count < 1003 * 48, "about 40 bytes a member, not 200")
    }

    @Test func theRecordIsHandedOverInPiecesThatMakeTheWhole() throws {
        let members = (0..<5000).map { RemoteIntent.Member(id: "request-\($0)", request: $0 % 7 == 0 ? nil : identity) }
        let intent = RemoteIntent(group: "g", state: .polling, endpoint: "e", url: "/v1/chat/completions", createdAt: 5, members: members,
                                  batchID: "batch_9")
        var pieces: [[UInt8]] = []
        intent.encode(chunkBytes: 4096) { (piece: [UInt8]) -> Void in pieces.append(piece) }
        #expect(pieces.count > 10)
        // A piece is handed over once it reaches the size: it passes it by one member at most.
        #expect(pieces.allSatisfy { $0.count < 4096 + 256 })
        #expect(Array(pieces.joined()) == intent.encoded())
        #expect(try RemoteIntent.decode(Array(pieces.joined())) == intent)
    }

    @Test func aMemberNamingNoListedRequestFileIsAProblem() {
        let head = #"{"group":"g","state":"polling","endpoint":"e","url":"u","created_at":1,"#
        let cases: [(String, String)] = [
            (head + #""request_files":[{"device":1,"inode":2,"size":3,"mtime_ns":4}],"members":[{"id":"a","request_file":1}]}"#,
             "member a names a request file the record does not list"),
            (head + #""request_files":[{"device":1,"inode":2,"size":3,"mtime_ns":4}],"members":[{"id":"a","request_file":-1}]}"#,
             "member a names a request file the record does not list"),
            (head + #""request_files":[],"members":[{"id":"a","request_file":"0"}]}"#, "member a names a request file the record does not list"),
            (head + #""request_files":[],"members":[{"id":"a","request_file":99999999999999999999999}]}"#,
             "member a names a request file the record does not list"),
            (head + #""request_files":[{"device":1}],"members":[]}"#, "request file 0 is a broken identity"),
            (head + #""request_files":{},"members":[]}"#, "request_files is not a list"),
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
