import Glibc
import Synchronization

/// With `LLMSPOOL_TEST_BATCH_STOP=<point>` set (tests only), the batch runner logs `batch
/// test stop` and stops the whole daemon with SIGSTOP once, at that point: a pause past the
/// lease lands in the window between a look at the batch's claim and what it allows by a
/// test's choice instead of by luck. The test sends SIGCONT. Points: `commit` (the first
/// group commit, after its look at the claim, before its writes), `publish` (the end, after
/// its look at the claim and the output's name, before the publication plan), `takeover`
/// (a resume's copy of the journal, after its look at the claim, before the copy's rename).
enum BatchTestStop {
    static let point: String? = getenv("LLMSPOOL_TEST_BATCH_STOP").map { String(cString: $0) }
    private static let stopped = Atomic<Bool>(false)

    static func at(_ name: String, batch: String, logger: Logger) {
        guard point == name, stopped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        logger.info("batch test stop", ["point": LogValue(name), "batch": LogValue(batch)])
        kill(getpid(), SIGSTOP)
    }
}
