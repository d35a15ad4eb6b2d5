/// A request that crashes the daemon must not crash it again on every restart. Each start
/// is counted in the task record before the request is sent, and the count is cleared when
/// the attempt ends; a request found with `limit` starts that never ended was in flight at
/// that many crashes in a row, and fails instead of being sent again. Pure.
public enum CrashGuard {
    public static let limit = 3

    /// Whether the request must fail instead of starting.
    public static func mustFail(_ history: TaskHistory) -> Bool {
        history.unfinishedStarts >= limit
    }

    /// The history to record before an attempt starts.
    public static func starting(_ history: TaskHistory) -> TaskHistory {
        var next = history
        next.unfinishedStarts = min(max(0, history.unfinishedStarts), limit) + 1
        return next
    }

    /// The history once an attempt ended, whatever its outcome.
    public static func ended(_ history: TaskHistory) -> TaskHistory {
        var next = history
        next.unfinishedStarts = 0
        return next
    }
}
