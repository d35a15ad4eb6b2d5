/// One page of the provider's list of batches (`GET /v1/batches`), newest first, as far
/// as reconciling needs it: which batch carries which group id in its `metadata`.
public struct RemoteBatchListing: Sendable, Equatable {
    /// One listed batch.
    public struct Entry: Sendable, Equatable {
        public var id: String
        /// `metadata.llmspool_group`, when the batch has it.
        public var group: String?
        /// `created_at`, seconds since 1970.
        public var createdAt: Int

        public init(id: String, group: String?, createdAt: Int) {
            self.id = id
            self.group = group
            self.createdAt = createdAt
        }
    }

    public var entries: [Entry]
    public var hasMore: Bool

    public init(entries: [Entry], hasMore: Bool) {
        self.entries = entries
        self.hasMore = hasMore
    }

    /// The metadata key that carries our group id.
    public static let groupKey = "llmspool_group"
}
