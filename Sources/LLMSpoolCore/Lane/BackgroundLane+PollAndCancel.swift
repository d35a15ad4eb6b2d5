/// The two steps both providers' flows take the same way, over either client.
extension BackgroundLane {
    /// Polls the group's recorded batch; its counts are kept for `status` and the metrics.
    func poll(_ id: String, client: some RemoteBatchClient) -> RemoteBatchMachine.Event {
        guard let batch = groups[id]?.machine.intent.batchID else {
            return .failed(retryable: false, retryAfter: nil, message: "no batch id is recorded")
        }
        let event = client.poll(batchID: batch)
        guard case .polled(let status) = event else { return event }
        groups[id]?.lastPoll = status
        logger.debug("remote batch polled", ["group": LogValue(id), "batch": LogValue(batch), "status": LogValue(status.status),
                                             "completed": "\(status.completed)", "failed": "\(status.failed)", "total": "\(status.total)"])
        if !status.hasEnded { LaneTestPause.at("polled", group: id, logger: logger) }
        return event
    }

    /// Cancels the group's recorded batch: every member of the group was deleted, or it ran past its deadline.
    func cancel(_ id: String, client: some RemoteBatchClient) -> RemoteBatchMachine.Event {
        guard let batch = groups[id]?.machine.intent.batchID else {
            return .failed(retryable: false, retryAfter: nil, message: "no batch id is recorded")
        }
        let event = client.cancel(batchID: batch)
        if event == .cancelRequested {
            let why = groups[id]?.machine.isWithdrawn == true ? "every request of its group was deleted" : "it ran past batch_deadline_seconds"
            logger.info("remote batch cancelled: \(why)", ["group": LogValue(id), "batch": LogValue(batch)])
        }
        return event
    }
}
