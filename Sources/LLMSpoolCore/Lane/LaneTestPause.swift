import Glibc

/// With `LLMSPOOL_TEST_LANE_PAUSE=<point>` set (tests only), the lane logs that it reached
/// the point and waits there 30 seconds (`LLMSPOOL_TEST_LANE_PAUSE_SECONDS`, 1 to 60), so that a test can kill the daemon at a known
/// step of a group's life instead of by luck. Points: `intent` (the intent is recorded,
/// nothing remote exists), `created` (the provider answered the create, its id is not
/// recorded yet), `uploading` (the first member's line of the upload, or of a Message
/// Batch's create, is sent, the rest is not), `polled` (a poll said the batch runs on), `downloading` (half of the first bytes
/// of the output are on disk), `split` (the first member's outcome is published, the
/// others' are not).
enum LaneTestPause {
    static let point: String? = getenv("LLMSPOOL_TEST_LANE_PAUSE").map { String(cString: $0) }

    static let seconds: UInt32 = getenv("LLMSPOOL_TEST_LANE_PAUSE_SECONDS").flatMap { UInt32(String(cString: $0)) }.map { min(max($0, 1), 60) } ?? 30

    static func isSet(_ name: String) -> Bool { point == name }

    static func at(_ name: String, group: String, logger: Logger) {
        guard point == name else { return }
        logger.info("lane test pause", ["point": LogValue(name), "group": LogValue(group)])
        sleep(seconds)
    }
}
