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

    /// `body`'s value, or nil: without a word where the file is absent (ENOENT), after a
    /// warning naming `what` for any other failure.
    public func bestEffortValue<T>(_ what: String, id: String? = nil, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch let error as SystemError where error.errno == ENOENT {
            return nil
        } catch {
            warning("\(what) failed; carrying on", id: id, ["reason": "\(error)"])
            return nil
        }
    }
}
