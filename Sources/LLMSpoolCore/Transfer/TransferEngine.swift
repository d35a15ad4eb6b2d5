import CCurl
import Foundation
import Glibc
import Synchronization

/// The event loop: one thread owns the libcurl multi handle, every transfer attached to it
/// and the `Scheduler`. Other threads talk to it only through `post`, which queues a
/// message and wakes the loop with `curl_multi_wakeup`.
public final class TransferEngine: @unchecked Sendable {
    // @unchecked Sendable holds because every stored `var` below is read and written only
    // on `thread`; the only state shared with other threads is `inbox` (a Mutex) and
    // `multi`, whose `curl_multi_wakeup` libcurl documents as callable from any thread.

    /// Settings the engine needs for each attempt.
    public struct Settings: Sendable {
        public var concurrency: Int
        public var connectTimeoutSeconds: Double
        public var requestTimeoutSeconds: Double
        public var shutdownGraceSeconds: Double

        public init(concurrency: Int, connectTimeoutSeconds: Double, requestTimeoutSeconds: Double, shutdownGraceSeconds: Double) {
            self.concurrency = concurrency
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.requestTimeoutSeconds = requestTimeoutSeconds
            self.shutdownGraceSeconds = shutdownGraceSeconds
        }
    }

    /// What the engine hands to the rest of the daemon.
    public struct Delegate: Sendable {
        /// An attempt ended; the finisher must write its outcome and then post `.finalized`.
        public var attemptEnded: @Sendable (AttemptOutcome) -> Void
        /// A request cannot be sent; the finisher must fail it and then post `.finalized`.
        public var rejected: @Sendable (_ id: String, _ requestPath: String, _ problem: RequestProblem) -> Void

        public init(attemptEnded: @escaping @Sendable (AttemptOutcome) -> Void,
                    rejected: @escaping @Sendable (String, String, RequestProblem) -> Void) {
            self.attemptEnded = attemptEnded
            self.rejected = rejected
        }
    }

    enum Message {
        case event(Scheduler.Event)
        case shutdown
    }

    /// Counts for status lines and tests, readable from any thread.
    public struct Snapshot: Sendable, Equatable {
        public var queued = 0
        public var transferring = 0
        public var known = 0
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex<[Message]>([])
    private let snapshotBox = Mutex(Snapshot())
    private let finished = DispatchSemaphore(value: 0)
    private let layout: SpoolLayout
    private let endpoint: Endpoint
    private let settings: Settings
    private let delegate: Delegate
    private let logger: Logger

    private var scheduler: Scheduler
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    private var transfersByID: [String: Transfer] = [:]
    private var shutdownDeadline: Date?

    public init(layout: SpoolLayout, endpoint: Endpoint, settings: Settings, delegate: Delegate, logger: Logger) throws {
        guard let multi = curl_multi_init() else { throw ConfigError("libcurl could not create a multi handle") }
        self.multi = multi
        self.layout = layout
        self.endpoint = endpoint
        self.settings = settings
        self.delegate = delegate
        self.logger = logger
        self.scheduler = Scheduler(concurrency: settings.concurrency)
        // Our own scheduler limits concurrency; libcurl's cache keeps that many connections warm.
        _ = llms_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, settings.concurrency)
    }

    deinit {
        curl_multi_cleanup(multi)
    }

    public var snapshot: Snapshot { snapshotBox.withLock { $0 } }

    /// Sends the loop an event from any thread.
    public func post(_ event: Scheduler.Event) {
        enqueue(.event(event))
    }

    private func enqueue(_ message: Message) {
        inbox.withLock { $0.append(message) }
        curl_multi_wakeup(multi)
    }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "llmspool.transfer"
        thread.start()
    }

    /// Stops taking new work, lets transfers in flight finish for the grace period, stops
    /// the rest (their requests stay in `outgoing` and start again from zero on the next
    /// run) and returns when the loop has ended.
    public func shutdown() {
        enqueue(.shutdown)
        finished.wait()
    }

    private func run() {
        var pending: [Message] = []
        while true {
            inbox.withLock { swap(&pending, &$0) }
            for message in pending { handle(message) }
            pending.removeAll(keepingCapacity: true)

            if let deadline = shutdownDeadline {
                if transfers.isEmpty { break }
                if Date() >= deadline {
                    abortAll()
                    break
                }
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            collectCompleted()
            publishSnapshot()
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, 1000, &ready)
        }
        publishSnapshot()
        finished.signal()
    }

    private func handle(_ message: Message) {
        switch message {
        case .event(let event):
            apply(scheduler.handle(event))
        case .shutdown:
            apply(scheduler.handle(.drain))
            shutdownDeadline = Date().addingTimeInterval(settings.shutdownGraceSeconds)
            if !transfers.isEmpty {
                logger.info("waiting for transfers in flight", ["count": "\(transfers.count)", "grace_seconds": "\(settings.shutdownGraceSeconds)"])
            }
        }
    }

    private func apply(_ actions: [Scheduler.Action]) {
        for action in actions {
            switch action {
            case .start(let task):
                begin(task)
            case .reject(let id, let path, let problem):
                delegate.rejected(id, path, problem)
            case .cancelTransfer(let id):
                if let transfer = transfersByID[id] { end(transfer, as: .cancelled) }
            case .dropQueued(let id):
                logger.info("request withdrawn before it started", id: id)
            }
        }
    }

    private func begin(_ task: TaskDescriptor) {
        let requestFD: Int32
        do {
            requestFD = try Syscall.open(task.requestPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch let error as SystemError where error.errno == ENOENT {
            // Finished or withdrawn since intake saw it: nothing to do.
            apply(scheduler.handle(.transferEnded(id: task.id)))
            apply(scheduler.handle(.finalized(id: task.id)))
            return
        } catch {
            apply(scheduler.handle(.transferEnded(id: task.id)))
            delegate.rejected(task.id, task.requestPath, RequestProblem(.unreadable, "cannot open the request: \(error)"))
            return
        }
        let partialPath = layout.partial(task.id)
        let partialFD: Int32
        do {
            partialFD = try Syscall.open(partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        } catch let error as SystemError {
            Syscall.close(requestFD)
            apply(scheduler.handle(.transferEnded(id: task.id)))
            delegate.attemptEnded(AttemptOutcome(task: task, ending: .diskError(error), partialFD: -1, headers: [:],
                                                 bytesSent: 0, bytesReceived: 0, startedAt: Date(), endedAt: Date(),
                                                 endpoint: endpoint.baseURL))
            return
        } catch {
            Syscall.close(requestFD)
            return
        }
        guard let handle = curl_easy_init() else {
            Syscall.close(requestFD)
            Syscall.close(partialFD)
            try? Syscall.unlinkIfPresent(partialPath)
            apply(scheduler.handle(.transferEnded(id: task.id)))
            delegate.rejected(task.id, task.requestPath, RequestProblem(.unreadable, "libcurl could not create a handle"))
            return
        }
        let transfer = Transfer(task: task, handle: handle, requestFD: requestFD, partialFD: partialFD, partialPath: partialPath)
        configure(transfer)
        transfers[handle] = transfer
        transfersByID[task.id] = transfer
        curl_multi_add_handle(multi, handle)
        logger.debug("upload started", id: task.id, ["bytes": "\(task.summary.size)", "stream": "\(task.summary.stream)"])
    }

    private func configure(_ transfer: Transfer) {
        let handle = transfer.handle
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        CurlHandle.set(handle, CURLOPT_URL, string: endpoint.chatCompletionsURL)
        CurlHandle.set(handle, CURLOPT_POST, 1)
        CurlHandle.set(handle, CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(transfer.task.summary.size))
        CurlHandle.set(handle, CURLOPT_NOSIGNAL, 1)
        CurlHandle.set(handle, CURLOPT_TCP_KEEPALIVE, 1)
        CurlHandle.set(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeoutSeconds * 1000))
        CurlHandle.set(handle, CURLOPT_TIMEOUT_MS, Int(settings.requestTimeoutSeconds * 1000))
        CurlHandle.set(handle, CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(transfer.errorBuffer))
        CurlHandle.set(handle, CURLOPT_READDATA, pointer: me)
        CurlHandle.set(handle, CURLOPT_READFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().readBody(into: buffer!, capacity: size * count)
        })
        CurlHandle.set(handle, CURLOPT_WRITEDATA, pointer: me)
        CurlHandle.set(handle, CURLOPT_WRITEFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().writeBody(buffer!, count: size * count)
        })
        CurlHandle.set(handle, CURLOPT_HEADERDATA, pointer: me)
        CurlHandle.set(handle, CURLOPT_HEADERFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveHeader(buffer!, count: size * count)
        })
        var list: UnsafeMutablePointer<curl_slist>? = nil
        list = curl_slist_append(list, "Content-Type: application/json")
        list = curl_slist_append(list, transfer.task.summary.stream ? "Accept: text/event-stream" : "Accept: application/json")
        list = curl_slist_append(list, "Expect:")  // no 100-continue round trip before the body
        if let key = endpoint.apiKey {
            list = curl_slist_append(list, "Authorization: Bearer \(key.value)")
        }
        transfer.headerList = list
        _ = llms_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
    }

    private func collectCompleted() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                  let transfer = transfers[handle] else { continue }
            let code = llms_curlmsg_result(message)
            let ending: AttemptOutcome.Ending
            if let diskError = transfer.diskError {
                ending = .diskError(diskError)
            } else if code == CURLE_OK {
                ending = .response(status: CurlHandle.responseCode(handle))
            } else {
                var text = String(cString: transfer.errorBuffer)
                if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
                if let readError = transfer.readError { text += " (reading the request: \(readError))" }
                ending = .transportError(code: Int32(code.rawValue), message: text)
            }
            end(transfer, as: ending)
        }
    }

    /// Detaches a transfer and passes its outcome (and its `.partial` descriptor) on.
    private func end(_ transfer: Transfer, as ending: AttemptOutcome.Ending) {
        let handle = transfer.handle
        curl_multi_remove_handle(multi, handle)
        curl_easy_cleanup(handle)
        curl_slist_free_all(transfer.headerList)
        Syscall.close(transfer.requestFD)
        transfers[handle] = nil
        transfersByID[transfer.task.id] = nil
        apply(scheduler.handle(.transferEnded(id: transfer.task.id)))
        delegate.attemptEnded(AttemptOutcome(
            task: transfer.task, ending: ending, partialFD: transfer.partialFD, headers: transfer.headers,
            bytesSent: transfer.bytesSent, bytesReceived: transfer.bytesReceived,
            startedAt: transfer.startedAt, endedAt: Date(), endpoint: endpoint.baseURL))
    }

    /// At the end of the grace period: stop what is still running. Requests stay in
    /// `outgoing`; the next run starts them again from zero.
    private func abortAll() {
        for transfer in transfers.values {
            let handle = transfer.handle
            curl_multi_remove_handle(multi, handle)
            curl_easy_cleanup(handle)
            curl_slist_free_all(transfer.headerList)
            Syscall.close(transfer.requestFD)
            Syscall.close(transfer.partialFD)
            try? Syscall.unlinkIfPresent(transfer.partialPath)
            logger.info("transfer stopped by shutdown; it will restart on the next run", id: transfer.task.id)
        }
        transfers.removeAll()
        transfersByID.removeAll()
    }

    private func publishSnapshot() {
        let current = Snapshot(queued: scheduler.queuedCount, transferring: scheduler.transferring, known: scheduler.states.count)
        snapshotBox.withLock { $0 = current }
    }
}
