import Foundation
import Glibc

/// Follows one request to its end from outside the daemon, by watching its files: the
/// answer's text as it streams into the `.partial`, then the outcome. It works with the
/// daemon started before or after it, on a request anyone dropped.
public final class RequestFollower {
    /// How the request ended.
    public enum Ending: Equatable, Sendable {
        case done(resultPath: String)
        case failed(message: String, recordPath: String)
        case cancelled
        /// Left in `outgoing` by the daemon because its name cannot be used: it never ends.
        case unusable(reason: String, path: String)
        case timedOut
    }

    /// What the live status line shows.
    public struct Progress: Sendable, Equatable {
        public var state: RequestState
        public var elapsed: Double
        public var tokensPerSecond: Double?
        public var attempt: Int
        /// When a waiting request's next attempt starts, and what ended the last one.
        public var nextAttemptAt: Date?
        public var lastError: String?
        /// Why it does not go now, when every endpoint waits (see `EndpointWait`).
        public var waitingFor: String?

        public init(state: RequestState, elapsed: Double, tokensPerSecond: Double? = nil, attempt: Int,
                    nextAttemptAt: Date? = nil, lastError: String? = nil) {
            self.state = state
            self.elapsed = elapsed
            self.tokensPerSecond = tokensPerSecond
            self.attempt = attempt
            self.nextAttemptAt = nextAttemptAt
            self.lastError = lastError
        }

        /// The live line: what `show` says, in one line.
        public func line(now: Date = Date()) -> String {
            var text = String(format: "%@  %.1fs  attempt %d", state.rawValue, elapsed, attempt)
            if let rate = tokensPerSecond { text += String(format: "  %.0f tok/s", rate) }
            if state == .deferred, let next = nextAttemptAt {
                text += String(format: "  next attempt in %.0fs", max(0, next.timeIntervalSince(now)))
            }
            if state == .deferred || state == .queued, let error = lastError { text += "  after: \(error)" }
            if state == .deferred || state == .queued, let waitingFor { text += "  (\(waitingFor))" }
            return text
        }
    }

    private let layout: SpoolLayout
    private let id: String
    private let onText: (String) -> Void
    private let onProgress: (Progress) -> Void
    private let started = Date()

    /// The `.partial` being followed; nil before it appears.
    private var partial: FileDescriptor?
    private var partialInode: UInt64 = 0
    private var parser = SSEParser()
    /// Text already written out, and the text of the attempt being read.
    private var printed = ""
    private var attemptText = ""
    private var firstTokenAt: Date?
    private var lastTokenAt: Date?
    private var tokens = 0
    private var attempt = 1
    /// The request's dialect, learned by validating its file (or, once it is gone, from the
    /// task record): how its events and its result are read.
    private var dialect: (any Dialect)?
    private var lastDialectLookup = Date.distantPast
    /// A prompt file's `.partial` holds plain text, not events (`RequestFormat.textPartial`).
    private var textPartial = false
    /// Bytes of a character split between two reads of a text `.partial`.
    private var pendingText: [UInt8] = []

    public init(layout: SpoolLayout, id: String, onText: @escaping (String) -> Void, onProgress: @escaping (Progress) -> Void) {
        self.layout = layout
        self.id = id
        self.onText = onText
        self.onProgress = onProgress
    }

    /// Seconds since the follower started.
    public var elapsed: Double { Date().timeIntervalSince(started) }

    /// Text pieces a second between the first and the last seen; nil before two arrived.
    public var tokensPerSecond: Double? {
        guard tokens > 1, let firstTokenAt, let lastTokenAt, lastTokenAt > firstTokenAt else { return nil }
        return Double(tokens - 1) / lastTokenAt.timeIntervalSince(firstTokenAt)
    }

    public func run(timeout: Double? = nil, pollInterval: Double = 0.05) -> Ending {
        let query = SpoolQuery(layout: layout)
        var lastProgress = Date.distantPast
        let requestPath = SpoolQuery(layout: layout).requestPath(of: id)
        var sawRequest = requestPath != nil
        if let requestPath, let name = requestPath.split(separator: "/").last {
            textPartial = RequestName.format(of: String(name))?.format.textPartial ?? false
        }
        while true {
            // Validating a large file costs: looked for once a second until it is known.
            if dialect == nil, Date().timeIntervalSince(lastDialectLookup) >= 1 {
                lastDialectLookup = Date()
                dialect = query.dialect(of: id, recordOnly: false)
            }
            readPartial()
            let state = query.state(of: id, live: nil)
            switch state {
            case .done:
                if dialect == nil { dialect = query.dialect(of: id, recordOnly: true) }
                readPartial()
                finishText()
                return .done(resultPath: layout.result(id))
            case .failed:
                // An unreadable record still ends the wait as failed, without its message.
                let record = (try? FileReader.prefix(path: layout.errorRecord(id), limit: 1 << 20)).flatMap(JSONObject.parse)
                // A provider's words, bound for a terminal: its control characters escaped.
                return .failed(message: TextEscaping.escape(record?["message"] as? String ?? "the request failed"), recordPath: layout.errorRecord(id))
            case .cancelled:
                return .cancelled
            case .unusable where !sawRequest:
                if let file = query.unusableFile(of: id) { return .unusable(reason: file.reason, path: file.path) }
            case .unusable:
                // Its own file was seen: a sibling left alone (`a.error.json` beside
                // `a.error.md`) says nothing of how the request ends.
                break
            case .unknown where sawRequest:
                // Gone from outgoing with no outcome yet: the outcome is being written.
                break
            case .queued, .inFlight, .deferred, .held, .draft:
                sawRequest = true
            case .unknown:
                break
            }
            if let timeout, Date().timeIntervalSince(started) > timeout { return .timedOut }
            if Date().timeIntervalSince(lastProgress) >= 0.2 {
                lastProgress = Date()
                onProgress(progress(state: state, query: query))
            }
            usleep(UInt32(pollInterval * 1_000_000))
        }
    }

    /// What the daemon's live status and the task record say, as `show` would: the attempt
    /// in flight, its token rate, and when a waiting request tries again.
    private func progress(state fileState: RequestState, query: SpoolQuery) -> Progress {
        let now = Date()
        let record = TaskRecord.load(layout, id: id)
        let made = record?.history.attempts.count ?? 0
        var live = LiveStatus.read(layout, now: now)
        // The live status is written once a second: an entry for an attempt the record
        // already counts as ended is stale, and an attempt shorter than a second shows in
        // its `.partial` only.
        if var fresh = live, let listed = fresh.inFlight.first(where: { $0.id == id }), listed.attempt <= made {
            fresh.inFlight.removeAll { $0.id == id }
            live = fresh
        }
        var state = live == nil ? fileState : query.state(of: id, live: live, now: now)
        if state == .queued || state == .deferred, Syscall.isPresent(layout.partial(id)) { state = .inFlight }
        // A record that says the task ended counts the last attempt, not a next one.
        let ended = record.map { $0.status == .done || $0.status == .failed } ?? false
        var current = Progress(state: state, elapsed: now.timeIntervalSince(started), attempt: max(attempt, ended ? made : made + 1))
        if let transfer = live?.inFlight.first(where: { $0.id == id }) {
            current.attempt = max(current.attempt, transfer.attempt)
        }
        // Counted here from the `.partial`, which is current; the live status's count is up
        // to a second old and would understate the rate (or, just after the start, inflate it).
        if state == .inFlight { current.tokensPerSecond = tokensPerSecond }
        if state != .inFlight {
            let verdict = query.waitVerdict(id, record: record, live: live, now: now)
            current.nextAttemptAt = verdict.nextAttempt.map(Date.init(timeIntervalSince1970:))
            current.lastError = record?.history.attempts.last?.message.map(TextEscaping.escape)
            current.waitingFor = verdict.holdingReason
            // As `queue` says it: nothing will send a queued request until a daemon runs.
            if live == nil && state == .queued { current.waitingFor = "no daemon running" }
        }
        return current
    }

    /// Reads what arrived in the `.partial` since the last look. A new file (a retry
    /// starts from zero) starts a new attempt: text already shown is not shown again.
    private func readPartial() {
        // No `.partial`: nothing has streamed yet, or the attempt ended.
        if let info = try? Syscall.lstat(layout.partial(id)), UInt64(info.st_ino) != partialInode {
            if partial != nil {
                partial = nil
                attempt += 1
                // The rate is the attempt's own.
                tokens = 0
                firstTokenAt = nil
                lastTokenAt = nil
            }
            do {
                partial = try FileDescriptor.open(layout.partial(id), O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
            } catch {
                // Renamed or removed since the lstat: the attempt ended, and the next look
                // reads its result or the next attempt's file.
                partial = nil
            }
            partialInode = UInt64(info.st_ino)
            parser = SSEParser()
            attemptText = ""
            pendingText = []
        }
        guard let partialFD = partial?.rawValue else { return }
        let reader = dialect ?? DialectRegistry.fallback
        // A read that fails shows nothing new now; the next look reads again.
        try? FileReader.forEachChunk(fd: partialFD, path: layout.partial(id)) { chunk in
            if textPartial {
                pendingText += chunk
                // A character cut at the end of what was written so far waits for its last bytes.
                let end = RequestFollower.completeUTF8Prefix(pendingText)
                let text = String(decoding: pendingText[..<end], as: UTF8.self)
                pendingText.removeFirst(end)
                if !text.isEmpty {
                    tokens += 1
                    if firstTokenAt == nil { firstTokenAt = Date() }
                    lastTokenAt = Date()
                    append(text)
                }
                return
            }
            parser.feed(chunk) { event in
                guard case .data(let payload) = event, let delta = reader.textDelta(ofEvent: Array(payload.utf8)) else { return }
                tokens += 1
                if firstTokenAt == nil { firstTokenAt = Date() }
                lastTokenAt = Date()
                append(delta)
            }
        }
    }

    private func append(_ delta: String) {
        attemptText += delta
        if attemptText.hasPrefix(printed) {
            let fresh = String(attemptText.dropFirst(printed.count))
            if !fresh.isEmpty {
                onText(fresh)
                printed = attemptText
            }
        } else if !printed.hasPrefix(attemptText) {
            // This attempt says something else: start over on a new line.
            onText("\n")
            onText(attemptText)
            printed = attemptText
        }
    }

    /// The result is the truth: whatever of it was not shown yet is shown now. An embedding
    /// has no text: one line says what came back.
    private func finishText() {
        // The result was replaced or is too large: the wait's verdict says where it is.
        guard let bytes = try? FileReader.prefix(path: layout.result(id), limit: 256 << 20) else { return }
        let reader = dialect ?? DialectRegistry.fallback
        if reader.id == EmbeddingsDialect.id {
            if let summary = EmbeddingsDialect.summary(ofResult: bytes) { onText(summary + "\n") }
            return
        }
        guard let content = reader.answerText(ofResult: bytes) else { return }
        if content.hasPrefix(printed) {
            let rest = String(content.dropFirst(printed.count))
            if !rest.isEmpty { onText(rest) }
        } else {
            onText("\n" + content)
        }
        printed = content
    }

    /// How many of `bytes` end on a whole character: a character whose last bytes have not
    /// been written yet is left for the next read.
    static func completeUTF8Prefix(_ bytes: [UInt8]) -> Int {
        var start = bytes.count
        while start > 0, bytes.count - start < 3, bytes[start - 1] & 0xC0 == 0x80 { start -= 1 }
        guard start > 0 else { return bytes.count }
        let lead = bytes[start - 1]
        let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
        return start - 1 + length > bytes.count ? start - 1 : bytes.count
    }
}
