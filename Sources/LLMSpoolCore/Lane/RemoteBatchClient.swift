/// The calls both providers' batch clients make alike once a batch's id is known: its
/// poll and its cancel. The lane's poll and cancel steps are written once over it
/// (`BackgroundLane+PollAndCancel`), so both flows record the counts `status` shows and log
/// the same lines.
protocol RemoteBatchClient {
    /// The batch's status (`GET …/{id}`), as the event the machine takes.
    func poll(batchID: String) -> RemoteBatchMachine.Event
    /// `POST …/{id}/cancel`, as the event the machine takes.
    func cancel(batchID: String) -> RemoteBatchMachine.Event
}

extension OpenAIBatchClient: RemoteBatchClient {}

extension AnthropicBatchClient: RemoteBatchClient {}
