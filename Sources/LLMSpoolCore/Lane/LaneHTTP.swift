import CCurl
import Foundation
import Glibc

/// One HTTP exchange of the background lane with a provider's Files or Batches API, made
/// with a libcurl easy handle on the lane's own thread (never on a shared pool): the body
/// streamed from a source, the answer kept in memory up to a limit or streamed to a file.
/// Every CURLcode is checked; the API key goes in a header list and nowhere else.
final class LaneHTTP {
    /// Where an answer's bytes go.
    enum Sink {
        /// Kept in memory, at most `limit` bytes (a JSON answer of the API).
        case memory(limit: Int)
        /// Written to `fd` as they arrive (a batch's output file), `path` for errors. Raw: the
        /// number of a `FileDescriptor` the caller owns and closes, lent for one exchange to
        /// curl's write callback, which reaches it through this copyable value.
        case file(fd: Int32, path: String)
        /// The first line only (at most `limit` bytes), without its newline; the rest is not
        /// read: a stranger's results file may be large, and its first line tells whose it is.
        case firstLine(limit: Int)
    }

    /// What came back: the status, the body when kept in memory, and the Retry-After.
    struct Answer {
        var status: Int
        var body: [UInt8]
        var retryAfter: Double?
        var bytesReceived: Int64
    }

    /// libcurl gave no answer (a refused connection, a timeout, a cut): the message names it.
    struct TransportFailure: Error, CustomStringConvertible {
        var description: String
        /// False when trying again cannot help (a download past what its group may hold).
        var retryable = true
    }

    /// The body could not be produced (a member's file changed or could not be read).
    struct BodyFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// The settings every exchange takes.
    struct Settings {
        var connectTimeoutSeconds: Double
        /// A small exchange (an API's JSON answer) must end within this; a large upload or
        /// download fails once it moves less than `bulkFloorBytesPerSecond` for this long.
        var idleTimeoutSeconds: Double
        var caFile: String?
        var caDirectory: String?
        /// A download stops when the disk it goes to has less free (`min_free_bytes`).
        var minFreeBytes: UInt64 = 0
        /// The most one member's line of a downloaded output may take
        /// (`max_response_bytes` and the line's envelope).
        var answerBytesPerMember: Int64 = .max
    }

    /// Bodies up to this are small exchanges, bound by a deadline.
    static let smallBodyBytes = 1 << 20
    /// What a large transfer must move a second, on average over the idle timeout: a
    /// provider trickling bytes must not hold the lane's one thread for days.
    static let bulkFloorBytesPerSecond = 1024
    /// How often a download looks at the free space left on its disk.
    static let spaceCheckBytes = 8 << 20

    let settings: Settings
    private let stop: LaneStopFlag
    /// The most a file sink takes in this exchange (`downloadDurably` sets it).
    var fileLimit: Int64 = .max
    private var bytesSinceSpaceCheck = 0
    private var source: (any LaneBodySource)?
    private var sink: Sink = .memory(limit: 0)
    private var received: [UInt8] = []
    private var receivedBytes: Int64 = 0
    private var sinkFailure: String?
    private var sinkFailureIsFinal = false
    /// The `firstLine` sink has its line and stopped the transfer on purpose.
    private var haveFirstLine = false
    private var retryAfter: Double?
    /// Tests only (`LaneTestPause`): called once, halfway through the first bytes written
    /// to a file sink, so that a kill leaves a download cut short on disk.
    var midFile: (() -> Void)?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init(settings: Settings, stop: LaneStopFlag) {
        self.settings = settings
        self.stop = stop
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// Makes one exchange. `body` is sent with its size known first; nil makes a GET.
    func exchange(method: String, url: String, headers: [String], body: (any LaneBodySource)?, sink: Sink) throws -> Answer {
        guard let handle = curl_easy_init() else { throw TransportFailure(description: "libcurl could not create a handle") }
        var list: UnsafeMutablePointer<curl_slist>?
        defer {
            curl_easy_cleanup(handle)
            curl_slist_free_all(list)
            source = nil
        }
        source = body
        self.sink = sink
        received = []
        receivedBytes = 0
        sinkFailure = nil
        sinkFailureIsFinal = false
        haveFirstLine = false
        retryAfter = nil
        bytesSinceSpaceCheck = Self.spaceCheckBytes
        errorBuffer[0] = 0
        let me = Unmanaged.passUnretained(self).toOpaque()
        try CurlHandle.set(handle, CURLOPT_URL, string: url)
        try CurlHandle.set(handle, CURLOPT_NOSIGNAL, 1)
        try CurlHandle.set(handle, CURLOPT_TCP_KEEPALIVE, 1)
        try CurlHandle.set(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeoutSeconds * 1000))
        // An API's small answer has a deadline; a large upload or download may take as long
        // as it needs while its bytes keep moving.
        var small = (body?.size ?? 0) <= Self.smallBodyBytes
        if case .file = sink { small = false }
        if small {
            try CurlHandle.set(handle, CURLOPT_TIMEOUT_MS, Int(min(settings.idleTimeoutSeconds, 1e9) * 1000))
            try CurlHandle.set(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        } else {
            try CurlHandle.set(handle, CURLOPT_LOW_SPEED_LIMIT, Self.bulkFloorBytesPerSecond)
        }
        try CurlHandle.set(handle, CURLOPT_LOW_SPEED_TIME, max(1, Int(min(settings.idleTimeoutSeconds, 1e9))))
        try CurlHandle.set(handle, CURLOPT_NOPROGRESS, 0)
        try CurlHandle.set(handle, CURLOPT_XFERINFODATA, pointer: me)
        try CurlHandle.setProgress(handle) { context, _, _, _, _ in
            Unmanaged<LaneHTTP>.fromOpaque(context!).takeUnretainedValue().stop.isSet ? 1 : 0
        }
        try CurlHandle.set(handle, CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        if let file = settings.caFile { try CurlHandle.set(handle, CURLOPT_CAINFO, string: file) }
        if let folder = settings.caDirectory { try CurlHandle.set(handle, CURLOPT_CAPATH, string: folder) }
        if let body {
            try CurlHandle.set(handle, CURLOPT_POST, 1)
            try CurlHandle.set(handle, CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(body.size))
            try CurlHandle.set(handle, CURLOPT_READDATA, pointer: me)
            try CurlHandle.set(handle, CURLOPT_READFUNCTION, callback: { buffer, size, count, context in
                Unmanaged<LaneHTTP>.fromOpaque(context!).takeUnretainedValue().read(into: buffer!, capacity: size * count)
            })
        } else if method != "GET" {
            try CurlHandle.set(handle, CURLOPT_CUSTOMREQUEST, string: method)
        }
        try CurlHandle.set(handle, CURLOPT_WRITEDATA, pointer: me)
        try CurlHandle.set(handle, CURLOPT_WRITEFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<LaneHTTP>.fromOpaque(context!).takeUnretainedValue().write(buffer!, count: size * count)
        })
        try CurlHandle.set(handle, CURLOPT_HEADERDATA, pointer: me)
        try CurlHandle.set(handle, CURLOPT_HEADERFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<LaneHTTP>.fromOpaque(context!).takeUnretainedValue().header(buffer!, count: size * count)
        })
        for line in headers + ["Expect:"] {
            guard let longer = curl_slist_append(list, line) else {
                throw CurlError(call: "curl_slist_append", code: Int32(CURLE_OUT_OF_MEMORY.rawValue), text: "out of memory")
            }
            list = longer
        }
        try CurlHandle.set(handle, CURLOPT_HTTPHEADER, list: list)
        let code = curl_easy_perform(handle)
        if code == CURLE_ABORTED_BY_CALLBACK && stop.isSet { throw TransportFailure(description: "\(method) \(url): stopped, the daemon is stopping") }
        if let sinkFailure { throw TransportFailure(description: sinkFailure, retryable: !sinkFailureIsFinal) }
        if let failure = source?.failure { throw BodyFailure(description: failure) }
        if haveFirstLine {
            return Answer(status: CurlHandle.responseCode(handle), body: received, retryAfter: retryAfter, bytesReceived: receivedBytes)
        }
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw TransportFailure(description: "\(method) \(url): \(text) (curl code \(code.rawValue))")
        }
        return Answer(status: CurlHandle.responseCode(handle), body: received, retryAfter: retryAfter, bytesReceived: receivedBytes)
    }

    private func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        guard let source else { return 0 }
        let count = source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
        return count < 0 ? llms_curl_readfunc_abort : count
    }

    private func write(_ buffer: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        receivedBytes += Int64(count)
        switch sink {
        case .memory(let limit):
            guard received.count + count <= limit else {
                sinkFailure = "the answer passed \(limit) bytes"
                return 0
            }
            received.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: count))
        case .firstLine(let limit):
            let bytes = UnsafeRawBufferPointer(start: buffer, count: count)
            let end = bytes.firstIndex(of: 0x0A) ?? count
            received.append(contentsOf: bytes[..<min(end, max(0, limit - received.count))])
            guard end == count, received.count < limit else {
                // Returning less than `count` ends the transfer: nothing more is wanted.
                haveFirstLine = true
                return 0
            }
        case .file(let fd, let path):
            guard receivedBytes <= fileLimit else {
                sinkFailure = "the download to \(path) passed \(fileLimit) bytes, more than its group's answers may take (max_response_bytes each)"
                sinkFailureIsFinal = true
                return 0
            }
            do {
                bytesSinceSpaceCheck += count
                if settings.minFreeBytes > 0 && bytesSinceSpaceCheck >= Self.spaceCheckBytes {
                    bytesSinceSpaceCheck = 0
                    // Unknown free space is no reason to stop: the write itself says ENOSPC.
                    let free = (try? Syscall.freeBytes(fd, path: path)) ?? .max
                    guard free >= settings.minFreeBytes else {
                        sinkFailure = "the download to \(path) stopped: its disk has \(free) bytes free, less than min_free_bytes (\(settings.minFreeBytes))"
                        return 0
                    }
                }
                if let pause = midFile {
                    midFile = nil
                    try Syscall.writeAll(fd, UnsafeRawBufferPointer(start: buffer, count: count / 2), path: path)
                    pause()
                    try Syscall.writeAll(fd, UnsafeRawBufferPointer(start: buffer + count / 2, count: count - count / 2), path: path)
                    return count
                }
                try Syscall.writeAll(fd, UnsafeRawBufferPointer(start: buffer, count: count), path: path)
            } catch {
                sinkFailure = "writing the download failed: \(error)"
                return 0
            }
        }
        return count
    }

    private func header(_ buffer: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        let line = String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)
        if line.lowercased().hasPrefix("retry-after:") {
            let value = line.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            // A number from the network: a sane one or none, read as the live lane reads it.
            if let seconds = RetryPolicy.requestedDelay(["retry-after": value], now: Date()) { retryAfter = min(seconds, 3600) }
        }
        return count
    }
}
