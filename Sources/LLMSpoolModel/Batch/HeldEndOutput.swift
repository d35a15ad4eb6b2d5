/// Whether a held end's output is lost: judged for an end this daemon held on its own spool
/// after a failure that came before the output got its name. What is at the `.partial`'s
/// name decides; what is at the output's name never does (a file put there is not the
/// batch's output, and a folder is in the way of nothing the end still writes).
public enum HeldEndOutput {
    /// What is at the `.partial`'s name, looked at without following a link.
    public enum Partial: Sendable, Equatable {
        case absent
        case regular(size: Int)
        /// A link, a FIFO, a folder, a socket: never the daemon's output.
        case other
    }

    /// Lost when the `.partial` is gone, is not a regular file, or is shorter than what the
    /// journal committed (cut or emptied by hand): the answers cannot be published, and
    /// sending every line again (what a cut output makes a restart do) would pay for them
    /// twice. `outputUnnamed`: the end failed before the output got its name, as this
    /// daemon saw it.
    public static func isLost(outputUnnamed: Bool, partial: Partial, committedLength: Int) -> Bool {
        guard outputUnnamed else { return false }
        switch partial {
        case .absent, .other: return true
        case .regular(let size): return size < committedLength
        }
    }
}
