/// What the stub's batch APIs counted, served at `GET /stub/batches`: creations and output
/// downloads per group id, and the groups whose batch was cancelled.
struct StubBatchCounts {
    var creations: [String: Int]
    var cancelled: [String]
    var downloads: [String: Int]

    /// Both APIs' counts as one.
    func merged(with other: StubBatchCounts) -> StubBatchCounts {
        StubBatchCounts(creations: creations.merging(other.creations, uniquingKeysWith: +), cancelled: cancelled + other.cancelled,
                        downloads: downloads.merging(other.downloads, uniquingKeysWith: +))
    }
}
