import CCurl
import Foundation
import Glibc

/// One HTTP attempt in flight: its curl handle, its body source, its `.partial`, what has
/// arrived and when content last arrived. Owned by the engine's thread; libcurl calls back
/// into it on that thread only.
final class Transfer {
    /// Where the request body comes from: the file itself (`bodyFile`), or a rewritten
    /// copy in memory (an endpoint that replaces `model`).
    enum Body {
        case file
        case memory([UInt8], offset: Int)
        /// `prefix` first, then the file from its current offset.
        case spliced(prefix: [UInt8], sent: Int, fileBytes: Int)
    }

    let task: TaskDescriptor
    /// The request file's bytes, for a format that makes its body (see `AttemptOutcome`).
    var requestSource: [UInt8]?
    /// The start went to the start journal, not to a record: until its outcome is written the
    /// journal must keep it (`StartJournalFile`).
    var startJournaled = false
    let endpointIndex: Int
    let endpointName: String
    /// The CA file its certificate check used, for the hint when the check fails.
    var caFile: String?
    let handle: UnsafeMutableRawPointer
    var body: Body
    /// The request file a `.file` or `.spliced` body is read from, until it is all sent.
    private var bodyFile: FileDescriptor?
    /// The `.partial`, held open; nil before the first response byte, and for good when
    /// the engine is short of descriptors (then it is opened for each write, see
    /// `TransferEngine.descriptorBudget`).
    private var partial: FileDescriptor?
    /// Whether the `.partial` stays open between writes.
    let holdsPartial: Bool
    /// The `.partial`'s inode once created: a file reopened by name must still be this one.
    private(set) var partialInode: UInt64?
    let partialPath: String
    let startedAt = Date()
    var clock: AttemptClock
    /// A look at the transfer when it goes quiet: libcurl 7.88 can leave an HTTP/2 stream
    /// waiting for nothing (`StalledStreamWatch`).
    var stallWatch = StalledStreamWatch()
    /// When the first response byte (of the status line) arrived, on the monotonic clock.
    var firstByteAt: Double?
    /// Told the local port of the connection libcurl placed this transfer on (multiplexing
    /// endpoints only; see `ConnectionPacing`).
    var placed: ((Int) -> Void)?
    /// The local port of the connection libcurl put the request on (its pre-request
    /// callback, for transfers that may share one): which watched socket is its connection.
    var localPort: Int?
    /// Asked once libcurl has a connection, just before the request goes: false holds the
    /// request back unsent (a batch line whose claim's lease has run out here; see
    /// `BatchLineStart`). A daemon paused with the transfer handed to libcurl and woken past
    /// its lease would otherwise send it before its keeper learns the claim was taken.
    var mayGo: (() -> Bool)?
    /// `mayGo` said no: libcurl ends the transfer as aborted, and it was never sent.
    var heldBack = false
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    var headers: [String: String] = [:]
    var bytesSent: Int64 = 0
    /// The body went to libcurl as `CURLOPT_COPYPOSTFIELDS`: `bytesSent` is then libcurl's count.
    var bodyHandedToCurl = false
    var bytesReceived: Int64 = 0
    /// SSE data events received: roughly the tokens of a stream.
    var events = 0
    var diskError: SystemError?
    /// Set when the answer passed the response limit.
    var overLimit = false
    /// One event of the stream passed `eventLimit` without ending.
    var eventTooLarge = false
    /// The longest event a stream may hold unfinished (`max_event_bytes`): a Responses
    /// stream's last event carries the whole response, images included, so the default is
    /// generous; a hostile server's endless line costs at most about 2.4 times this per
    /// stream, not `max_response_bytes`.
    let eventLimit: Int
    let responseLimit: Int64
    var readError: SystemError?
    /// Response bytes not yet in the `.partial`: what libcurl handed over during one turn of
    /// the event loop, written at the turn's end by `flushPartial()` in one `write`, however
    /// many reads and chunks they came in.
    private var unwritten: [UInt8] = []
    /// Told when `unwritten` takes its first bytes, so that the engine flushes this transfer
    /// at the end of the turn; nil writes each piece at once.
    var needsFlush: ((Transfer) -> Void)?
    /// Whether a file already under one of this answer's names (the `.partial`, the
    /// result's temporary) may be replaced: a leftover, unless this daemon's claim may have
    /// lapsed (paused past its lease), when it may be the file of the daemon that took the
    /// request over, still writing it. Nil: always.
    var mayReplaceFiles: (() -> Bool)?
    /// Why the spool's names lead outside it now (`SpoolLayout.integrityProblem`), asked
    /// after each file of the answer's is created by name; nil: never asked.
    var spoolElsewhere: (() -> String?)?
    /// Response bytes for the `.partial` received since the engine last cleared it, at the
    /// end of a turn: what the loop's pacing weighs, whether they were flushed mid-turn (at
    /// `flushThreshold`) or at its end.
    var turnBytes = 0
    private var sse: SSEParser?
    /// A stream's result, assembled as the events arrive.
    private var assembler: (any StreamAssembling)?
    /// Where the first choice's text goes once it outgrows `spillThreshold`: the hidden
    /// temporary of the result, so that a long answer is never held in memory.
    let spillPath: String
    let fileMode: mode_t
    /// Makes the spool's missing folders again, each logged (`SpoolLayout.recreateMissingFolders`).
    let remakeFolders: () -> Void
    private var spillFile: FileDescriptor?
    private var unflushedSpillBytes = 0
    /// A batch line's answer is held here rather than in a `.partial` of its own, as
    /// `BatchLineAnswer` decides; nil for every other request.
    private var lineAnswer: BatchLineAnswer?
    private var heldAnswer: [UInt8] = []
    /// `BatchLineAnswer.rawBodyNeeded` for this response, decided at its first body byte.
    private var rawBodyNeeded: Bool?

    /// Tests only: a response header of this name (from `LLMSPOOL_TEST_CRASH_HEADER`) makes
    /// the daemon die as a parser bug would, so that the crash guard can be tested for real.
    static let crashHeader: String? = ProcessInfo.processInfo.environment["LLMSPOOL_TEST_CRASH_HEADER"]?.lowercased()

    /// Text held in memory before it goes to the result's temporary: most answers stay
    /// below it and cost no extra descriptor.
    static let spillThreshold = 64 * 1024
    /// Unwritten response bytes past this are written at once, within the turn: a large
    /// answer arriving in one turn is not held in memory.
    static let flushThreshold = 64 * 1024
    /// Writeback of the result is started every so many bytes, so that the final fsync
    /// of a long answer finds little left to write.
    static let writebackInterval = 8 << 20

    /// A prompt file's `.partial`, which shows the answer's plain text while `partialPath`
    /// takes the raw events; nil for other requests.
    let textPath: String?
    private var text: FileDescriptor?
    private var textInode: UInt64?
    private let dialect: any Dialect

    init(task: TaskDescriptor, endpointIndex: Int, endpointName: String, handle: UnsafeMutableRawPointer, body: Body,
         bodyFile: consuming FileDescriptor?, holdsPartial: Bool, partialPath: String, textPath: String? = nil, spillPath: String, fileMode: mode_t,
         remakeFolders: @escaping () -> Void, responseLimit: Int64, eventLimit: Int, now: Double) {
        self.remakeFolders = remakeFolders
        self.textPath = textPath
        self.dialect = DialectRegistry.dialect(for: task.summary)
        self.holdsPartial = holdsPartial
        self.spillPath = spillPath
        self.fileMode = fileMode
        self.responseLimit = responseLimit
        self.eventLimit = eventLimit
        self.task = task
        self.endpointIndex = endpointIndex
        self.endpointName = endpointName
        self.handle = handle
        self.body = body
        switch body {
        case .file: bodySize = task.summary.size
        case .memory(let bytes, _): bodySize = bytes.count
        case .spliced(let prefix, _, let fileBytes): bodySize = prefix.count + fileBytes
        }
        self.bodyFile = bodyFile
        self.partialPath = partialPath
        self.clock = AttemptClock(startedAt: now)
        if task.summary.stream {
            sse = SSEParser()
            assembler = DialectRegistry.dialect(for: task.summary).makeAssembler()
        }
        if BatchLineRef(id: task.id) != nil { lineAnswer = BatchLineAnswer() }
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        errorBuffer.deallocate()
        closeText()
    }

    func closeText() {
        text = nil
    }

    /// Closes the `.partial` held open, if one is: for an attempt whose answer is not kept.
    func closePartial() {
        partial = nil
    }

    /// The `.partial` held open, for the finisher; nil when none is held.
    func handOffPartial() -> DescriptorOwner? {
        guard let file = partial.take() else { return nil }
        return DescriptorOwner(file)
    }

    /// Appends the answer's text to the text `.partial`: a new file at the first piece (as
    /// for the raw one), reopened by name only while it is still that file.
    private func writeText(_ text: String) throws {
        guard let textPath else { return }
        let bytes = Array(text.utf8)
        if textInode == nil {
            let file = try createNewFile(textPath)
            textInode = UInt64(try file.fstat().st_ino)
            if holdsPartial { self.text = consume file }
        }
        if let number = self.text?.rawValue {
            try Syscall.writeAll(number, bytes, path: textPath)
            return
        }
        let file = try FileDescriptor.open(textPath, O_WRONLY | O_APPEND | O_NOFOLLOW)
        guard UInt64(try file.fstat().st_ino) == textInode else {
            throw SystemError(errno: ESTALE, call: "open", path: textPath)
        }
        try file.writeAll(bytes)
    }

    /// The body's length, the Content-Length sent; kept when a body in memory is handed to libcurl.
    let bodySize: Int

    /// A body held in memory, handed to libcurl as it is configured (`CURLOPT_COPYPOSTFIELDS`)
    /// and dropped here: libcurl's one copy goes out with the request headers, and the
    /// read callback and the upload buffer libcurl allocates for it are not needed.
    func takeMemoryBody() -> [UInt8]? {
        guard case .memory(let bytes, 0) = body else { return nil }
        body = .memory([], offset: 0)
        return bytes
    }

    /// Closes the body file, if the body is one and it is still open.
    func closeBody() {
        guard bodyFile?.rawValue != nil else { return }
        bodyFile = nil
        body = .memory([], offset: 0)
    }

    private func readFile(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        do {
            // Never more than the Content-Length sent, whatever the file has become.
            let room = max(0, min(capacity, bodySize - Int(bytesSent)))
            guard let fd = bodyFile?.rawValue else { throw SystemError(errno: EBADF, call: "read (the body's file is closed)", path: task.requestPath) }
            let count = room == 0 ? 0 : try Syscall.read(fd, into: UnsafeMutableRawBufferPointer(start: buffer, count: room), path: task.requestPath)
            if count == 0 && Int(bytesSent) < bodySize {
                // The file shrank during the upload: stop now rather than leave the server
                // waiting for bytes that will never come until the idle timer fires.
                readError = SystemError(errno: EIO, call: "read (the request shrank while it was sent)", path: task.requestPath)
                return llms_curl_readfunc_abort
            }
            bytesSent += Int64(count)
            return count
        } catch let error as SystemError {
            readError = error
            return llms_curl_readfunc_abort
        } catch {
            return llms_curl_readfunc_abort
        }
    }

    /// libcurl asks for the next piece of the body.
    func readBody(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        switch body {
        case .file:
            let count = readFile(into: buffer, capacity: capacity)
            // The whole body is sent: a long stream keeps a socket and its .partial only.
            if count == 0 { closeBody() }
            return count
        case .spliced(let prefix, let sent, let fileBytes):
            guard sent < prefix.count else { return readFile(into: buffer, capacity: capacity) }
            let count = min(capacity, prefix.count - sent)
            prefix.withUnsafeBytes { source in
                UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + sent, byteCount: count)
            }
            body = .spliced(prefix: prefix, sent: sent + count, fileBytes: fileBytes)
            bytesSent += Int64(count)
            return count
        case .memory(let bytes, let offset):
            let count = min(capacity, bytes.count - offset)
            bytes.withUnsafeBytes { source in
                UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + offset, byteCount: count)
            }
            body = .memory(bytes, offset: offset + count)
            bytesSent += Int64(count)
            return count
        }
    }

    /// Response bytes go to the `.partial` as they arrive: gathered over the loop's turn
    /// (see `unwritten`), so that a `tail -f` sees them within the turn that read them.
    func writeBody(_ buffer: UnsafeMutablePointer<CChar>, count: Int, now: Double) -> Int {
        let bytes = UnsafeRawBufferPointer(start: buffer, count: count)
        if bytesReceived + Int64(count) > responseLimit {
            overLimit = true
            return 0
        }
        do {
            if lineAnswer != nil {
                try keepLineAnswer(bytes)
            } else {
                if unwritten.isEmpty, let needsFlush { needsFlush(self) }
                unwritten.append(contentsOf: bytes)
                turnBytes += count
                if needsFlush == nil || unwritten.count >= Transfer.flushThreshold { try flushPartial() }
            }
            bytesReceived += Int64(count)
            if sse == nil {
                clock.contentArrived(at: now)
            } else {
                var dataEvents = 0
                var text = ""
                sse!.feedRaw(bytes) { event in
                    if case .data(let payload) = event, assembler!.isContent(payload) {
                        dataEvents += 1
                        if textPath != nil, let delta = dialect.textDelta(ofEvent: Array(payload)) { text += delta }
                    }
                    assembler!.consume(event)
                }
                if dataEvents > 0 {
                    events += dataEvents
                    clock.contentArrived(at: now)
                }
                if !text.isEmpty { try writeText(text) }
                if assembler!.heldContentCount >= Transfer.spillThreshold { try spill() }
                if sse!.heldBytes > eventLimit {
                    eventTooLarge = true
                    return 0
                }
            }
        } catch {
            if let error = error as? SystemError { diskError = error }
            return 0  // anything but `count` makes libcurl stop with CURLE_WRITE_ERROR
        }
        return count
    }

    /// Writes the response bytes gathered since the last flush to the `.partial`. They are
    /// dropped when the write fails: the attempt then ends as a disk error.
    func flushPartial() throws {
        guard !unwritten.isEmpty else { return }
        // Not kept between turns: thousands of streams would each hold one for nothing.
        defer { unwritten = [] }
        if partialInode == nil { try createPartial() }
        try unwritten.withUnsafeBytes { bytes in
            if let number = partial?.rawValue {
                try Syscall.writeAll(number, bytes, path: partialPath)
            } else {
                try appendToPartial(bytes)
            }
        }
    }

    /// A batch line's piece of the answer: held, or written to the `.partial` once the
    /// answer outgrows what is held (`BatchLineAnswer`).
    private func keepLineAnswer(_ bytes: UnsafeRawBufferPointer) throws {
        if rawBodyNeeded == nil {
            rawBodyNeeded = BatchLineAnswer.rawBodyNeeded(requestedStream: task.summary.stream, contentType: headers["content-type"],
                                                          status: CurlHandle.responseCode(handle))
        }
        switch lineAnswer!.arrive(bytes.count, rawNeeded: rawBodyNeeded!) {
        case .hold:
            heldAnswer.append(contentsOf: bytes)
        case .spill:
            try createPartial()
            let held = heldAnswer
            heldAnswer = []
            if let number = partial?.rawValue {
                try Syscall.writeAll(number, held, path: partialPath)
                try Syscall.writeAll(number, bytes, path: partialPath)
            } else {
                try held.withUnsafeBytes { try appendToPartial($0) }
                try appendToPartial(bytes)
            }
        case .write:
            if let number = partial?.rawValue {
                try Syscall.writeAll(number, bytes, path: partialPath)
            } else {
                try appendToPartial(bytes)
            }
        case .drop:
            break
        }
    }

    /// A batch line's answer, when it is held in memory (empty when it was not kept: a
    /// successful stream, judged by its events); nil when it is in the `.partial`, or the
    /// request is not a batch line.
    func takeHeldAnswer() -> [UInt8]? {
        guard let lineAnswer, lineAnswer.place != .file else { return nil }
        defer { heldAnswer = [] }
        return heldAnswer
    }

    /// Creates the `.partial` at the first response byte, not before the request goes
    /// out: picking a request up creates no file. A new file, never an old one truncated:
    /// a daemon that lost this request may still be writing to the old one.
    private func createPartial() throws {
        let file = try createNewFile(partialPath)
        partialInode = UInt64(try file.fstat().st_ino)
        if holdsPartial { partial = consume file }
    }

    /// A file of the answer's in `incoming`, readable: one whose name is taken while it is
    /// written is copied back from its descriptor (`HeldFile`). Its folder is made again
    /// when someone removed it (`rm -rf incoming`) while the answer arrived: an answer
    /// already paid for is not failed for the want of a folder.
    private func createNewFile(_ path: String) throws -> FileDescriptor {
        func create() throws -> FileDescriptor {
            guard let mayReplaceFiles, !mayReplaceFiles() else { return try FileDescriptor.createNew(path, O_RDWR | O_NOFOLLOW, mode: fileMode) }
            // EEXIST ends the attempt, which the finisher then finds another daemon's.
            return try FileDescriptor.open(path, O_RDWR | O_NOFOLLOW | O_CREAT | O_EXCL, mode: fileMode)
        }
        let file: FileDescriptor
        do {
            file = try create()
        } catch let error as SystemError where error.errno == ENOENT {
            remakeFolders()
            file = try create()
        }
        if let problem = spoolElsewhere?() {
            // Created through a name that leads outside the spool (a folder swapped for a
            // link since the start): taken back, and the attempt ends, held by the finisher.
            try file.unlinkThenClose(path)
            throw SpoolElsewhereError(description: problem)
        }
        return file
    }

    /// Opens the `.partial` by name for one write. A file of that name that is not ours
    /// (replaced by a daemon that took the request over) is not written to.
    private func appendToPartial(_ bytes: UnsafeRawBufferPointer) throws {
        let file = try FileDescriptor.open(partialPath, O_WRONLY | O_APPEND | O_NOFOLLOW)
        guard UInt64(try file.fstat().st_ino) == partialInode else {
            throw SystemError(errno: ESTALE, call: "open", path: partialPath)
        }
        try file.writeAll(bytes)
    }

    /// Moves the text held so far to the result's temporary.
    private func spill() throws {
        if spillFile?.rawValue == nil {
            // A new file, never an old one truncated: as for the `.partial`.
            let file = try createNewFile(spillPath)
            try file.writeAll(assembler!.contentHead)
            spillFile = consume file
        }
        guard let number = spillFile?.rawValue else { return }
        let text = assembler!.takeContent()
        try Syscall.writeAll(number, text, path: spillPath)
        unflushedSpillBytes += text.count
        if unflushedSpillBytes >= Transfer.writebackInterval {
            unflushedSpillBytes = 0
            Syscall.startWriteback(number)
        }
    }

    /// Ends the event stream (an event not closed by a blank line still counts) and hands
    /// over the verdict and the result's temporary, if the text went there.
    func finishStream() -> StreamResult? {
        guard sse != nil, assembler != nil else { return nil }
        sse!.finishRaw { assembler!.consume($0) }
        closeText()
        var handoff: DescriptorOwner?
        if let file = spillFile.take() { handoff = DescriptorOwner(file) }
        let result = StreamResult(verdict: assembler!.verdict(), spill: handoff, spillPath: spillPath)
        assembler = nil
        return result
    }

    /// Removes the result's temporary of an attempt that will not be finished, then closes
    /// it: closed first, sshfs can keep it as `.fuse_hidden*` (`FileDescriptor.unlinkThenClose`).
    func discardSpill() {
        guard let file = spillFile.take() else { return }
        do {
            try file.unlinkThenClose(spillPath)
        } catch {
            // A hidden temporary: no reader takes it for a result, and the next start's
            // leftover sweep removes it (SpoolDaemon.removeLeftovers, which logs its failures).
        }
    }

    func receiveHeader(_ buffer: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        if firstByteAt == nil { firstByteAt = TransferEngine.monotonic() }
        switch HeaderLine.parse(UnsafeRawBufferPointer(start: buffer, count: count)) {
        case .statusLine:
            headers.removeAll()  // a new response (after 100 Continue or a redirect) starts afresh
        case .field(let name, let value) where HeaderLine.keeps(name, having: headers.count):
            if name == Transfer.crashHeader { fatalError("test-only crash: the response carried \(name)") }
            headers[name] = value
        case .field, .other:
            break
        }
        return count
    }
}
