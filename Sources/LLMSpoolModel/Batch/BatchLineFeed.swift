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
    /// Lines handed to the background lane that its thread has not taken in yet, at most,
    /// before more lines that may wait are fed. Each one waits there as a whole task; when
    /// the lane's thread falls behind (a busy machine), a window of 50,000 would otherwise
    /// pile up in its inbox, and the daemon's peak memory would follow the load.
    public var laneBacklogLimit: Int

    /// Lines the lane's inbox may hold before the feed waits for it: a couple of the
    /// runner's rounds, so that the lane never runs dry while it keeps up.
    public static let defaultLaneBacklogLimit = 4096

    public init(liveWindow: Int, backgroundWindow: Int, laneBacklogLimit: Int = BatchLineFeed.defaultLaneBacklogLimit) {
        self.liveWindow = max(1, liveWindow)
        self.backgroundWindow = max(1, backgroundWindow)
        self.laneBacklogLimit = max(1, laneBacklogLimit)
    }

    /// The lane the scheduler will send a line's task to: a line that may wait and that
    /// no endpoint batches is live (or fails at once as `no-endpoint`), so it counts as live.
    public static func lane(of route: LaneRouter.Route) -> Lane {
        switch route {
        case .deferred: .background
        case .live, .noEndpoint: .live
        }
    }

    /// The lane a line's task goes to once the groups are consulted: a line fed to the
    /// group that carries it (`RemoteGroupClaims.lineFed`) waits in the background lane,
    /// whatever its route.
    public static func lane(of route: LaneRouter.Route, fed: RemoteGroupClaims.LineFed) -> Lane {
        fed == .toItsGroup ? .background : lane(of: route)
    }

    /// Whether a line of `lane` may be fed with `live` live lines and `background` lines
    /// of the background lane in flight, `laneBacklog` of them not yet taken in by the lane.
    public func admits(_ lane: Lane, live: Int, background: Int, laneBacklog: Int = 0) -> Bool {
        switch lane {
        case .live: live < liveWindow
        case .background: background < backgroundWindow && laneBacklog < laneBacklogLimit
        }
    }

    /// Whether a line of `lane` that is not admitted waits only for the lane's inbox to
    /// drain: no line ends to make room then, so the feed looks again soon by itself.
    public func waitsForLane(_ lane: Lane, background: Int, laneBacklog: Int) -> Bool {
        lane == .background && background < backgroundWindow && laneBacklog >= laneBacklogLimit
    }
}
