/// What the stub's batch APIs counted, served at `GET /stub/batches`: creations and output
/// downloads per group id, the groups whose batch was cancelled, and the polls answered
/// with a trickle (`poll:trickle`).
struct StubBatchCounts {
    var creations: [String: Int]
    var cancelled: [String]
    var downloads: [String: Int]
    var trickled = 0

    /// Both APIs' counts as one.
    func merged(with other: StubBatchCounts) -> StubBatchCounts {
        StubBatchCounts(creations: creations.merging(other.creations, uniquingKeysWith: +), cancelled: cancelled + other.cancelled,
                        downloads: downloads.merging(other.downloads, uniquingKeysWith: +), trickled: trickled + other.trickled)
    }
}
