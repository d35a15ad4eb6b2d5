/// Which lane each line of a batch file is fed to, and whether it may be fed now. Lines
/// that may wait go to the background lane under a window of their own, as large as a
/// remote batch (a group fills only with that many lines at hand, and then holds them for
/// hours, which must not hold back the live lines); the others go live under the live
/// window. Lines are fed in their order: a line that may not go yet stops the feed until
/// its lane has room. Pure.
public struct BatchLineFeed: Sendable, Equatable {
    public enum Lane: Sendable, Equatable {
        case live
        /// Through a provider's Batch API.
        case background
    }

    /// Live lines in flight, at most.
    public var liveWindow: Int
    /// Lines in the background lane, at most (`batch_max_requests` by default).
    public var backgroundWindow: Int

    public init(liveWindow: Int, backgroundWindow: Int) {
        self.liveWindow = max(1, liveWindow)
        self.backgroundWindow = max(1, backgroundWindow)
    }

    /// The lane the scheduler will send a line's task to: a line that may wait and that
    /// no endpoint batches is live (or fails at once as `no-endpoint`), so it counts as live.
    public static func lane(of route: LaneRouter.Route) -> Lane {
        switch route {
        case .deferred: .background
        case .live, .noEndpoint: .live
        }
    }

    /// Whether a line of `lane` may be fed with `live` live lines and `background` lines
    /// of the background lane in flight.
    public func admits(_ lane: Lane, live: Int, background: Int) -> Bool {
        switch lane {
        case .live: live < liveWindow
        case .background: background < backgroundWindow
        }
    }
}
