/// One page of the provider's list of batches (`GET /v1/batches`, `GET /v1/messages/batches`),
/// newest first, as far as reconciling needs it: which batch carries which group id in its
/// `metadata` (OpenAI), or which may, by its size, and has ended so its results can tell (Anthropic).
public struct RemoteBatchListing: Sendable, Equatable {
    /// One listed batch.
    public struct Entry: Sendable, Equatable {
        public var id: String
        /// `metadata.llmspool_group`, when the batch has it.
        public var group: String?
        /// `created_at`, seconds since 1970.
        public var createdAt: Int
        /// How many requests the batch holds, when the listing says (Anthropic's
        /// `request_counts` add up to it): a batch of another size is not the group's.
        public var total: Int?
        /// Whether it has ended, so that its results can be read.
        public var ended: Bool

        public init(id: String, group: String?, createdAt: Int, total: Int? = nil, ended: Bool = false) {
            self.id = id
            self.group = group
            self.createdAt = createdAt
            self.total = total
            self.ended = ended
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
