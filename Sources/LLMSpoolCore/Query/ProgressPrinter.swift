import Foundation
import Glibc

/// Where the live line of `submit --wait`, `ask --wait` and `wait` goes.
public enum ProgressMode: Sendable, Equatable {
    /// Nowhere: stderr is not a terminal and `--progress` was not given.
    case none
    /// Rewritten in place on a terminal.
    case terminal
    /// One line each time it says something new (`--progress` without a terminal): for
    /// scripts and logs.
    case lines

    /// The mode for this process: a terminal on stderr gets the live line, `--progress`
    /// asks for it anywhere.
    public init(forced: Bool, stderrIsTerminal: Bool = isatty(2) == 1) {
        self = stderrIsTerminal ? .terminal : (forced ? .lines : .none)
    }
}

/// Turns each progress report into what to write on stderr, if anything: on a terminal the
/// line rewritten every time; as lines, a new line only when the state, the attempt or the
/// reason changed, or once a second while tokens arrive (so that the rate shows).
public struct ProgressPrinter: Sendable {
    public let mode: ProgressMode
    private var lastKey: String?
    private var lastRateAt = -Double.infinity

    public init(mode: ProgressMode) {
        self.mode = mode
    }

    public mutating func output(for progress: RequestFollower.Progress, now: Date = Date()) -> String? {
        switch mode {
        case .none:
            return nil
        case .terminal:
            return "\r\u{1B}[K" + progress.line(now: now)
        case .lines:
            let key = "\(progress.state.rawValue) \(progress.attempt) \(progress.waitingFor ?? "") \(progress.lastError ?? "")"
            let rateDue = progress.tokensPerSecond != nil && progress.elapsed - lastRateAt >= 1
            guard key != lastKey || rateDue else { return nil }
            lastKey = key
            if progress.tokensPerSecond != nil { lastRateAt = progress.elapsed }
            return progress.line(now: now) + "\n"
        }
    }
}
