import Glibc

extension Logger {
    /// Runs a step whose failure changes no outcome (removing a leftover, an informational
    /// write): a file already gone is what was wanted; any other failure is logged, never
    /// swallowed.
    public func bestEffort(_ what: String, id: String? = nil, _ body: () throws -> Void) {
        do {
            try body()
        } catch let error as SystemError where error.errno == ENOENT {
        } catch {
            warning("\(what) failed; carrying on", id: id, ["reason": "\(error)"])
        }
    }
}
