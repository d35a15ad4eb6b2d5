import Glibc

/// The remote steps of a group carried by Anthropic's Message Batches, which the lane
/// calls for an intent whose api is `anthropic`: the create (the members' bodies streamed
/// from their files by `AnthropicBatchSource`), the list and the inspection of a listed
/// batch's first result while reconciling, and the results streamed to disk. The poll, the
/// cancel (`BackgroundLane+PollAndCancel`, over `RemoteBatchClient`), the split and the
/// publication are the lane's own, shared with OpenAI's flow.
struct MessageBatchSteps {
    let client: AnthropicBatchClient
    let http: LaneHTTP
    let layout: SpoolLayout
    let logger: Logger

    /// The event `step` amounts to, or nil for a step that is not the provider's own (poll,
    /// cancel, split, publish). `output` and `errors` are where the group's downloads go.
    func perform(_ step: RemoteBatchMachine.Step, group: LaneGroup, output: String, errors: String) -> RemoteBatchMachine.Event? {
        let intent = group.machine.intent
        let id = intent.group
        switch step {
        case .upload:
            return .failed(retryable: false, retryAfter: nil, message: "a message batch takes no upload")
        case .create:
            return create(group)
        case .list(let after):
            return client.list(after: after)
        case .inspect(let batchID):
            let event = client.inspect(batchID: batchID)
            if case .inspected(_, let found) = event, found == id {
                logger.info("remote batch found by its group id, in the custom_ids of its results", ["group": LogValue(id), "batch": LogValue(batchID)])
            }
            return event
        case .download(let results, _):
            logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(errors) }
            guard results != nil, let batch = intent.batchID else {
                logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(output) }
                return .downloaded
            }
            if let failure = http.downloadDurably(to: output, mode: layout.fileMode, group: id, members: intent.members.count, logger: logger, { fd in
                client.downloadResults(batchID: batch, to: fd, path: output)
            }) { return failure }
            logger.info("remote batch downloaded", ["group": LogValue(id), "batch": LogValue(batch)])
            return .downloaded
        case .poll, .cancel, .split, .publish:
            return nil
        }
    }

    /// The create, from the members at hand. After a restart the members arrive again as
    /// the watcher finds them (a batch file's lines, as its runner feeds them): one whose
    /// file is there but not found yet is waited for; one whose file is gone (deleted or
    /// replaced meanwhile) is left out, and the others keep their indices.
    private func create(_ group: LaneGroup) -> RemoteBatchMachine.Event {
        let intent = group.machine.intent
        let files = SpoolFiles(layout: layout)
        var lines: [LaneUploadSource.Line] = []
        var indices: [Int] = []
        for (index, member) in intent.members.enumerated() {
            guard let held = group.held[member.id] else {
                // A batch file's line has no request file of its own: its batch's input
                // is what the line was read from, and its runner feeds it again.
                let path = BatchLineRef(id: member.id).map { layout.batchRequest($0.batch) } ?? layout.request(member.id)
                let found: FileIdentity?
                do {
                    found = try files.identity(of: path)
                } catch {
                    return .failed(retryable: true, retryAfter: 1, message: "cannot look at \(path) for the create: \(error)")
                }
                guard LaneMembership.isSameRequest(recorded: member.request, found: found), found != nil else { continue }
                return .failed(retryable: true, retryAfter: 1, message: "the request \(member.id) is not found again yet; the create waits for it")
            }
            var size = group.sizes[member.id]
            if size == nil {
                do {
                    size = try LaneUploadSource.readBody(path: held.path, range: held.body, identity: held.identity)
                        .map { LaneUploadSource.line(id: held.id, url: intent.url, body: $0).count }
                } catch {
                    return .failed(retryable: false, retryAfter: nil, message: "reading \(held.path) for the create failed: \(error)")
                }
            }
            guard let size else { return .failed(retryable: false, retryAfter: nil, message: "\(held.path) changed after it joined the group") }
            lines.append(LaneUploadSource.Line(id: member.id, path: held.path, body: held.body, identity: held.identity, size: size))
            indices.append(index)
        }
        guard !lines.isEmpty else { return .failed(retryable: false, retryAfter: nil, message: "no request of the group is left to create its batch") }
        guard let source = AnthropicBatchSource(group: intent.group, url: intent.url, lines: lines, indices: indices) else {
            return .failed(retryable: false, retryAfter: nil, message: "the group's create is too large to describe")
        }
        if LaneTestPause.isSet("uploading") { source.afterFirstMember = { [logger] in LaneTestPause.at("uploading", group: intent.group, logger: logger) } }
        let event = client.create(source: source)
        switch event {
        case .created(let batch):
            logger.info("remote batch created", ["group": LogValue(intent.group), "batch": LogValue(batch), "bytes": "\(source.size)"])
            LaneTestPause.at("created", group: intent.group, logger: logger)
        case .createUncertain:
            logger.warning("the create's outcome is unknown; the provider's list and the results' custom_ids are read before any other create",
                           ["group": LogValue(intent.group)])
        default:
            break
        }
        return event
    }
}
