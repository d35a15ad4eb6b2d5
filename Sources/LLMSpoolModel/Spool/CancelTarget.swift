/// What a name given to `llmspool cancel` may stand for, in the order to look: a request's
/// id first (as before batch files could be named), then a batch file's name, which is also
/// taken with its `.jsonl`. Cancelling either is deleting its file in `outgoing`, which the
/// daemon already treats as a cancellation. Pure.
public enum CancelTarget: Equatable, Sendable {
    /// A request of this id: `outgoing/<id>.<format>`, or its file in `hold`.
    case request(id: String)
    /// A batch file: `outgoing/<name>.jsonl`.
    case batch(name: String)

    /// The targets `argument` may name; empty when it can name neither.
    public static func candidates(of argument: String) -> [CancelTarget] {
        // `<name>.jsonl` is reserved for batches: no request has such an id.
        if case .batch(let name) = RequestName.classify(argument) { return [.batch(name: name)] }
        guard !argument.isEmpty, !argument.contains("/") else { return [] }
        let batch: [CancelTarget] = RequestName.classify(argument + SpoolLayout.batchSuffix) == .batch(name: argument) ? [.batch(name: argument)] : []
        return [.request(id: argument)] + batch
    }
}
