/// The spool's on-disk contract: every folder and every file name that the daemon and its
/// users share is defined here and nowhere else.
///
/// | path | written by | appears when |
/// | --- | --- | --- |
/// | `outgoing/<id>.json` | the producer | it wants an answer; removed by the daemon when the task ends |
/// | `incoming/<id>.partial` | the daemon | bytes arrive (a prompt file's: the answer's text); renamed or removed when the attempt ends |
/// | `incoming/<id>.sse` | the daemon | a streamed answer completed: the raw event stream |
/// | `incoming/<id>.md` | the daemon | a prompt file's answer: its transcript, just before the result |
/// | `incoming/<id>.json` | the daemon | the task succeeded; always the last file of a success |
/// | `failed/<id>.error.json` | the daemon | the task failed: what happened |
/// | `failed/<id>.json` | the daemon | the request, moved from `outgoing` after its record is written |
/// | `state/<id>.json` | the daemon | the task's attempts and the commit point of its outcome (`TaskRecord`) |
/// | `state/<id>.name` | the daemon | the escaped original name of a request renamed to a safe id |
/// | `failed/superseded/<n>.<name>` | the daemon | an earlier failure of an id that failed again |
/// | `state/leases/<id>.lease` | the daemon | the claim of the daemon sending it, on a shared spool |
/// | `state/leases/.remote.<group>.lease` | the daemon | on a shared spool, the claim of the daemon following a group's remote batch (`RemoteGroupClaims`) |
/// | `outgoing/<name>.jsonl` | the producer | a batch: one request per line; removed when every line has ended |
/// | `incoming/<name>.jsonl.partial` | the daemon | the batch runs: one output line per ended line, in the order they end |
/// | `incoming/<name>.jsonl` | the daemon | every line has ended: the whole output |
/// | `incoming/<name>.batch.json` | the daemon | the batch ended; always its last file |
/// | `failed/<name>.jsonl` | the daemon | an invalid batch, moved after its `failed/<name>.jsonl.error.json` |
/// | `state/batches/<name>.journal` | the daemon | the batch runs: its committed lines (`BatchJournal`) |
/// | `state/batches/<name>.ids` | the daemon | the batch runs: its lines' `custom_id`s, read at acceptance, so that a cancellation names every line even once the input is gone (`BatchIDList`) |
/// | `state/daemons/<host>.<pid>.json` | the daemon | its entry in the roster of daemons on the spool |
/// | `state/.daemon.json` | the daemon | the live status that `status` reads while it runs |
/// | `state/.lock` | the daemon | held (flock) by the daemon that owns a local spool |
/// | `state/.spool-id` | the daemon | its first start: the spool's id, by which a share mounted again is known as this spool (`SpoolRootPin`) |
/// | `state/.run` | the daemon | a run in the one-fsync order began: its boot and start (`PowerLossRepair.RunMark`) |
/// | `state/.starts`, `.starts.old` | the daemon | on a local spool, the starts of attempts, appended before each request is sent (`StartJournal`) |
/// | `state/control/send-now.<id>`, `send-now-all` | `retry` | a person asked for a waiting request (or all) to go now |
/// | `hold/<id>.json` | `hold` | a request kept unsent until `release` |
/// | `state/remote/<group>.json` | the daemon | a group sent through a provider's Batch API: its intent record (`RemoteIntent`), from before anything remote exists until every member is published |
/// | `state/hooks/<id>@<inode>`, `state/batch-hooks/<name>` | the daemon | a hook owed for an outcome (or a batch's end), from just before its commit point until the hook has run (`HookRecovery`) |
public struct SpoolLayout: Sendable, Equatable {
    public static let requestSuffix = ".json"
    public static let partialSuffix = ".partial"
    public static let rawStreamSuffix = ".sse"
    public static let errorRecordSuffix = ".error.json"
    public static let batchSuffix = ".jsonl"
    public static let batchSummarySuffix = ".batch.json"
    public static let batchErrorsSuffix = ".errors.jsonl"
    /// Producers write under a name with this prefix and rename it into place when done.
    public static let hiddenPrefix = "."
    public static let temporarySuffix = ".tmp"

    public let root: String
    /// Files and folders the daemon creates: the owner's only, unless the group may read.
    public let fileMode: UInt32
    public let directoryMode: UInt32
    /// The root the running daemon started with (`pinned(to:)`); nil for the commands,
    /// which look once and need no pin.
    public private(set) var rootPin: (any SpoolRootPin)?

    public init(root: String, groupReadable: Bool = false) {
        var trimmed = root
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.root = trimmed
        fileMode = groupReadable ? 0o640 : 0o600
        directoryMode = groupReadable ? 0o750 : 0o700
    }

    /// The same layout, its root pinned: nothing is written through a root that is not `pin`.
    public func pinned(to pin: any SpoolRootPin) -> SpoolLayout {
        var layout = self
        layout.rootPin = pin
        return layout
    }

    /// The same folder with the same modes, pinned to the same pin (or neither pinned).
    public static func == (lhs: SpoolLayout, rhs: SpoolLayout) -> Bool {
        lhs.root == rhs.root && lhs.fileMode == rhs.fileMode && lhs.directoryMode == rhs.directoryMode && lhs.rootPin === rhs.rootPin
    }

    /// The folders directly under the root that the daemon reads or writes through: none
    /// may be a symbolic link (followed, results and `clean`'s removals would land outside
    /// the spool).
    public var topFolders: [String] { [outgoing, incoming, failed, state, hold] }

    public var outgoing: String { root + "/outgoing" }
    public var incoming: String { root + "/incoming" }
    public var failed: String { root + "/failed" }
    /// The daemon's own bookkeeping; producers and consumers need not look inside.
    public var state: String { root + "/state" }
    /// Earlier failures of an id that failed again, moved aside instead of overwritten:
    /// `failed/superseded/<n>.<id>.json` and `<n>.<id>.error.json`.
    public var superseded: String { root + "/failed/superseded" }
    /// Claims of daemons sharing the spool (see `LeaseManager`).
    public var leases: String { root + "/state/leases" }
    public func lease(_ id: String) -> String { "\(leases)/\(id).lease" }
    public func takeover(_ id: String) -> String { "\(leases)/\(id).takeover" }
    /// Claim ids of groups of the background lane start with this: hidden, as no request's
    /// id can be (names starting with a dot are not requests).
    public static let remoteGroupClaimPrefix = hiddenPrefix + "remote."
    /// The claim id of the daemon following `group`'s remote batch: `state/leases/.remote.<group>.lease`.
    public static func remoteGroupClaimID(_ group: String) -> String { remoteGroupClaimPrefix + group }
    /// The roster: one entry per daemon on the spool (see `DaemonRoster`).
    public var daemons: String { state + "/daemons" }
    /// What a running daemon is doing, for `status`.
    public var liveStatus: String { state + "/.daemon.json" }
    /// The lock of the daemon that owns a local spool.
    public var lock: String { state + "/.lock" }
    /// The spool's id, made once: the same spool is known by it on a new mount (`SpoolRootPin`).
    public var spoolIDFile: String { state + "/.spool-id" }
    /// The boot and start of the last run in the one-fsync order (`PowerLossRepair`).
    public var runMark: String { state + "/.run" }
    /// The start journal's current generation (`StartJournal`).
    public var startJournal: String { state + "/.starts" }
    /// The start journal's previous generation.
    public var previousStartJournal: String { state + "/.starts.old" }
    /// Where held requests wait, unsent, like Postfix's hold queue: outside `outgoing`, so
    /// holding needs no cooperation from the daemon (taking a request out withdraws it).
    public var hold: String { root + "/hold" }
    public func held(_ id: String) -> String { "\(hold)/\(id)\(Self.requestSuffix)" }
    /// Requests from the commands to the running daemons, as files: every daemon on the
    /// spool reads them, so they need no socket and work across a share.
    public var control: String { state + "/control" }
    public static let sendNowPrefix = "send-now."
    public static let sendNowAllName = "send-now-all"
    public func sendNow(_ id: String) -> String { "\(control)/\(Self.sendNowPrefix)\(id)" }
    public var sendNowAll: String { "\(control)/\(Self.sendNowAllName)" }

    public func request(_ id: String) -> String { "\(outgoing)/\(id)\(Self.requestSuffix)" }
    public func partial(_ id: String) -> String { "\(incoming)/\(id)\(Self.partialSuffix)" }
    public func rawStream(_ id: String) -> String { "\(incoming)/\(id)\(Self.rawStreamSuffix)" }
    /// A prompt file's raw events while they arrive, hidden: its `.partial` holds the text.
    public func rawEvents(_ id: String) -> String { "\(incoming)/\(Self.hiddenPrefix)\(id)\(Self.rawStreamSuffix)\(Self.temporarySuffix)" }
    public func result(_ id: String) -> String { "\(incoming)/\(id)\(Self.requestSuffix)" }
    public func failedRequest(_ id: String) -> String { "\(failed)/\(id)\(Self.requestSuffix)" }
    /// Where a failed request of any format goes: its own ending kept (`failed/<id>.md`).
    public func failedRequest(_ id: String, like requestPath: String) -> String {
        "\(failed)/\(id)\(RequestName.suffix(ofPath: requestPath))"
    }
    /// A prompt file's transcript: its conversation and the answer, as Markdown.
    public func transcript(_ id: String) -> String { "\(incoming)/\(id)\(PromptRequestFormat.transcriptSuffix)" }
    public func errorRecord(_ id: String) -> String { "\(failed)/\(id)\(Self.errorRecordSuffix)" }
    public func taskRecord(_ id: String) -> String { "\(state)/\(id)\(Self.requestSuffix)" }
    /// The original name, escaped, of a request renamed to a safe id.
    public func originalName(_ id: String) -> String { "\(state)/\(id)\(Self.originalNameSuffix)" }
    public static let originalNameSuffix = ".name"

    /// Journals of running batches.
    public var batches: String { root + "/state/batches" }
    public func batchRequest(_ name: String) -> String { "\(outgoing)/\(name)\(Self.batchSuffix)" }
    public func batchPartial(_ name: String) -> String { "\(incoming)/\(name)\(Self.batchSuffix)\(Self.partialSuffix)" }
    public func batchOutput(_ name: String) -> String { "\(incoming)/\(name)\(Self.batchSuffix)" }
    public func batchSummary(_ name: String) -> String { "\(incoming)/\(name)\(Self.batchSummarySuffix)" }
    /// The failed lines of a batch's output alone (OpenAI's error file), when there are any.
    public func batchErrors(_ name: String) -> String { "\(incoming)/\(name)\(Self.batchErrorsSuffix)" }
    public func failedBatch(_ name: String) -> String { "\(failed)/\(name)\(Self.batchSuffix)" }
    /// An invalid batch's record: `failed/<name>.jsonl.error.json`, never a request's record
    /// (ids ending in `.jsonl` are reserved), so request `x` and batch `x` fail apart.
    public func batchErrorRecord(_ name: String) -> String { "\(failed)/\(name)\(Self.batchSuffix)\(Self.errorRecordSuffix)" }
    public func batchJournal(_ name: String) -> String { "\(batches)/\(name).journal" }
    public static let batchJournalSuffix = ".journal"
    public static let batchIDListSuffix = ".ids"
    /// The `custom_id`s of a running batch's lines (`BatchIDList`).
    public func batchIDList(_ name: String) -> String { "\(batches)/\(name)\(Self.batchIDListSuffix)" }
    /// The scheduler's id of a batch's line: hidden, so that its `.partial` and temporaries
    /// in `incoming` are never taken for a result, and no request file can have it.
    public static func lineID(batch name: String, entry: Int) -> String { "\(hiddenPrefix)\(name)\(batchSuffix).\(entry)" }
    /// Whether a name in `incoming` is a line's `.partial` or temporary (a leftover at start).
    public static func isLineTemporary(_ name: String) -> Bool { batchOfLineTemporary(name) != nil }

    /// The batch whose line a `.partial` or temporary in `incoming` belongs to: `.<batch>.jsonl.<entry>`
    /// with either suffix, or the temporary of that hidden id's result
    /// (`..<batch>.jsonl.<entry>.json.tmp`, a streamed line's text). Nil for any other name,
    /// the temporaries of a batch's own files (`batchOfOwnTemporary`) among them.
    public static func batchOfLineTemporary(_ name: String) -> String? {
        var rest = Substring(name)
        guard rest.hasPrefix(hiddenPrefix) else { return nil }
        if rest.hasSuffix(partialSuffix) {
            rest = rest.dropLast(partialSuffix.count)
        } else if rest.hasSuffix(temporarySuffix) {
            rest = rest.dropLast(temporarySuffix.count)
            // Only a hidden id's result is hidden twice: `.x.jsonl.3.json.tmp` is request x.jsonl.3's.
            if rest.hasPrefix(hiddenPrefix + hiddenPrefix), rest.hasSuffix(requestSuffix) { rest = rest.dropLast(requestSuffix.count) }
        } else {
            return nil
        }
        rest = rest.dropFirst(hiddenPrefix.count)
        if rest.hasPrefix(hiddenPrefix) { rest = rest.dropFirst(hiddenPrefix.count) }
        guard let dot = rest.lastIndex(of: ".") else { return nil }
        let entry = rest[rest.index(after: dot)...]
        guard !entry.isEmpty, entry.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let id = rest[..<dot]
        guard id.hasSuffix(batchSuffix), id.count > batchSuffix.count else { return nil }
        return String(id.dropLast(batchSuffix.count))
    }

    /// The batch whose summary or errors file a temporary in `incoming` is being written
    /// for (`.<batch>.batch.json.tmp`, `.<batch>.errors.jsonl.tmp`); nil for any other name.
    /// On a shared spool it is the batch's runner's until its claim ends.
    public static func batchOfOwnTemporary(_ name: String) -> String? {
        guard name.hasPrefix(hiddenPrefix), name.hasSuffix(temporarySuffix) else { return nil }
        let file = name.dropFirst(hiddenPrefix.count).dropLast(temporarySuffix.count)
        for suffix in [batchSummarySuffix, batchErrorsSuffix] where file.hasSuffix(suffix) && file.count > suffix.count {
            return String(file.dropLast(suffix.count))
        }
        return nil
    }

    /// Intent records of groups sent through a provider's Batch API (the background lane).
    public var remote: String { state + "/remote" }
    public func remoteIntent(_ group: String) -> String { "\(remote)/\(group)\(Self.requestSuffix)" }

    /// Hooks owed for outcomes about to be committed: one file per outcome, from just
    /// before its commit point until its hook has run (`HookRecovery`), holding the mark of
    /// the request it answers. Named by the id and the request's inode, so that a newer
    /// request of the same id has a note of its own.
    public var pendingHooks: String { state + "/hooks" }
    public func pendingHook(_ id: String, request: FileIdentity?) -> String {
        request.map { "\(pendingHooks)/\(id)@\($0.inode)" } ?? "\(pendingHooks)/\(id)"
    }
    /// Batch files' hooks owed, by the batch's name: a folder of their own, since a
    /// request's id and a batch's name may be the same word.
    public var pendingBatchHooks: String { state + "/batch-hooks" }
    public func pendingBatchHook(_ name: String) -> String { "\(pendingBatchHooks)/\(name)" }

    /// A copy of a file the daemon holds open, made beside the file it becomes: a batch's
    /// output or journal copied by a daemon taking the batch over (`HeldFile.takeOver`), an
    /// output or answer given its name again (`HeldFile.giveNameAgain`). A name of its own
    /// per copy (`unique`), so that two daemons never write one temporary, and one that
    /// neither a line's leftover (`isLineTemporary`) nor a request's
    /// (`LeaseRules.leftoverID`) matches, so that no daemon starting meanwhile removes it.
    /// One left by a crash goes with the sweeps, once older than `heldCopyLeftoverSeconds`.
    public static func heldCopyTemporary(in folder: String, unique: String) -> String {
        "\(folder)/\(hiddenPrefix)\(heldCopyInfix)\(unique)\(temporarySuffix)"
    }
    public static let heldCopyInfix = "held-copy."
    public static func isHeldCopyTemporary(_ name: String) -> Bool {
        name.hasPrefix(hiddenPrefix + heldCopyInfix) && name.hasSuffix(temporarySuffix)
    }
    /// A copy is written without pause: one untouched this long is a leftover.
    public static let heldCopyLeftoverSeconds = 600.0
    /// Whether a sweep removes the file `name`, last modified at `modified`.
    public static func isHeldCopyLeftover(_ name: String, modified: Double, now: Double) -> Bool {
        isHeldCopyTemporary(name) && modified + heldCopyLeftoverSeconds < now
    }

    /// A hidden name beside `path` to write to before renaming onto it.
    public static func temporary(for path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return hiddenPrefix + path + temporarySuffix }
        let directory = path[..<slash]
        let name = path[path.index(after: slash)...]
        return "\(directory)/\(hiddenPrefix)\(name)\(temporarySuffix)"
    }

    /// Every folder of the spool, parents first.
    public var folders: [String] { [root, outgoing, incoming, failed, state, leases, batches, control, remote, pendingHooks, pendingBatchHooks] }
}
