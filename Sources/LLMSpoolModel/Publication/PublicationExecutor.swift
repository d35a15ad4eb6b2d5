/// The file operations a publication needs. The daemon's implementation goes through the
/// syscall wrapper; the tests' keeps files in memory and can stop after any step.
public protocol PublicationFiles {
    associatedtype Failure: Error
    func syncFile(_ path: String) throws(Failure)
    /// The inode of a file, for the record that commits to it.
    func inode(of path: String) throws(Failure) -> UInt64
    func write(_ bytes: [UInt8], to path: String, durable: Bool) throws(Failure)
    /// `PublicationStep.writeFailedLines`: the lines of `output` that `BatchOutputLine.isFailed`
    /// says failed, to `path` (durable); empty when there are none. With the output already
    /// gone (taken by its consumer), nothing, and `path` is left as it is.
    func writeFailedLines(of output: String, to path: String) throws(Failure)
    /// Writes `state/<id>.json` through a hidden temporary; fsynced when `durable`.
    func writeRecord(_ record: TaskRecord, durable: Bool) throws(Failure)
    func rename(_ from: String, _ to: String) throws(Failure)
    /// Renames a producer's file if it is there; false when it was gone already. As with
    /// `unlinkIfPresent`, only the rename can say through a stale cache.
    func renameIfPresent(_ from: String, _ to: String) throws(Failure) -> Bool
    /// The identity of the file now at `path`, or nil when there is none.
    func identity(of path: String) throws(Failure) -> FileIdentity?
    /// Removes a producer's file if it is still the one `expected` describes (any file
    /// when nil). A spool on a network mount, whose cached attributes can show for a
    /// second the file another mount replaced, compares the content read afresh.
    func unlinkIfSame(_ path: String, _ expected: FileIdentity?) throws(Failure) -> ProducerFileCheck
    /// Renames a producer's file if it is still the one `expected` describes, as `unlinkIfSame`.
    func renameIfSame(_ from: String, _ to: String, _ expected: FileIdentity?) throws(Failure) -> ProducerFileCheck
    /// Removes a file if it is there; false when it was gone already. Only the unlink can
    /// say: through a network mount's stale cache a lookup just before can still find a
    /// file another mount has removed.
    @discardableResult
    func unlinkIfPresent(_ path: String) throws(Failure) -> Bool
    func exists(_ path: String) throws(Failure) -> Bool
    func syncFolder(_ path: String) throws(Failure)
    /// Creates a folder if it is missing.
    func ensureFolder(_ path: String) throws(Failure)
    /// Sets the extended attribute `ResultMark.attribute` of a file to the mark's value.
    func mark(_ path: String, _ mark: ResultMark) throws(Failure)
    /// Throws when no step may run now: the names a plan uses lead outside the spool
    /// (its root swapped or unmounted, a folder made a link). Asked once before each run.
    func mayPublish() throws(Failure)
}

/// What a step that moves or removes a producer's file found.
public enum ProducerFileCheck: Sendable, Equatable {
    /// Still the file expected: moved or removed.
    case done
    /// A newer file had replaced it: left in place, as a new task.
    case replacedByNewer
    /// It was already gone (withdrawn, or finished by another daemon).
    case alreadyGone
}

extension PublicationFiles {
    /// Files kept in memory have nothing to lead elsewhere.
    public func mayPublish() throws(Failure) {}

    /// Where attributes are the truth (a local disk): compared by its identity alone.
    public func unlinkIfSame(_ path: String, _ expected: FileIdentity?) throws(Failure) -> ProducerFileCheck {
        try ifSameIdentity(path, expected) { () throws(Failure) in try unlinkIfPresent(path) }
    }

    public func renameIfSame(_ from: String, _ to: String, _ expected: FileIdentity?) throws(Failure) -> ProducerFileCheck {
        try ifSameIdentity(from, expected) { () throws(Failure) in try renameIfPresent(from, to) }
    }

    /// `act` on the file at `path` if its identity is still `expected` (any file when nil);
    /// `act` says whether the name was still there: seen through a stale cache, a file
    /// another daemon moved or removed since is gone, and nothing ended here.
    public func ifSameIdentity(_ path: String, _ expected: FileIdentity?, _ act: () throws(Failure) -> Bool) throws(Failure) -> ProducerFileCheck {
        guard let current = try identity(of: path) else { return .alreadyGone }
        if let expected, !current.isSameInstance(as: expected) { return .replacedByNewer }
        return try act() ? .done : .alreadyGone
    }
}

/// Runs publication plans: a small loop, the same for the daemon and the crash tests.
public struct PublicationExecutor<Files: PublicationFiles> {
    /// What became of a producer's file that a step meant to move or remove.
    public enum Note: Sendable, Equatable {
        /// A newer file had replaced it: left in place, as a new task.
        case replacedByNewer(String)
        /// It was already gone (withdrawn, or finished by another daemon).
        case alreadyGone(String)
        /// A hook's note could not be written (`notePendingHook`): the outcome goes on, and
        /// its hook runs as before, but a kill before it has run loses it.
        case hookNotNoted(String, reason: String)
    }

    public let files: Files
    /// Called before each step with its index in the run; a test stops the run there.
    public var beforeStep: @Sendable (Int, PublicationStep) -> Bool

    public init(files: Files, beforeStep: @escaping @Sendable (Int, PublicationStep) -> Bool = { _, _ in true }) {
        self.files = files
        self.beforeStep = beforeStep
    }

    /// Runs the steps in order and stops at the first failure. Returns the notes, or the
    /// failure with the index of the step that failed. A run stopped by `beforeStep` returns
    /// `.stopped` with the index it stopped at.
    public func run(_ steps: [PublicationStep]) -> Result {
        if let first = steps.first {
            do throws(Files.Failure) {
                try files.mayPublish()
            } catch {
                return .failed(at: 0, step: first, error: error)
            }
        }
        var notes: [Note] = []
        for (index, step) in steps.enumerated() {
            guard beforeStep(index, step) else { return .stopped(at: index) }
            do throws(Files.Failure) {
                if let note = try perform(step) { notes.append(note) }
            } catch {
                return .failed(at: index, step: step, error: error)
            }
        }
        return .completed(notes)
    }

    /// The outcome of a run.
    public enum Result {
        case completed([Note])
        case failed(at: Int, step: PublicationStep, error: Files.Failure)
        case stopped(at: Int)
    }

    /// A step of one plan in a batch that failed (or a shared folder fsync that did).
    public struct StepFailure: Sendable, Equatable, CustomStringConvertible {
        /// The step's index in its plan.
        public let index: Int
        public let description: String

        public init(index: Int, description: String) {
            self.index = index
            self.description = description
        }
    }

    /// Runs several plans of the same shape step by step, all plans' first steps, then
    /// all second steps, and so on: a folder fsync that several plans reach at once is done
    /// once for all of them. A plan whose step fails runs no further steps; the others go on.
    /// Returns, per plan, nil when it completed or the step that failed.
    public func runBatch(_ plans: [[PublicationStep]]) -> [StepFailure?] {
        var failures = [StepFailure?](repeating: nil, count: plans.count)
        let length = plans.map(\.count).max() ?? 0
        if length > 0 {
            do throws(Files.Failure) {
                try files.mayPublish()
            } catch {
                return plans.map { _ in StepFailure(index: 0, description: "\(error)") }
            }
        }
        var counter = 0
        for position in 0..<length {
            var syncedFolders: [String: String?] = [:]
            func failure(_ text: String?) -> StepFailure? { text.map { StepFailure(index: position, description: $0) } }
            for (plan, steps) in plans.enumerated() where failures[plan] == nil && position < steps.count {
                let step = steps[position]
                if let folder = step.sharedFolder, let done = syncedFolders[folder] {
                    failures[plan] = failure(done)
                    continue
                }
                guard beforeStep(counter, step) else {
                    return failures.enumerated().map { $1 ?? StepFailure(index: min(position, plans[$0].count), description: "stopped") }
                }
                counter += 1
                var text: String?
                do throws(Files.Failure) {
                    _ = try perform(step)
                } catch {
                    text = "\(error)"
                }
                failures[plan] = failure(text)
                if let folder = step.sharedFolder { syncedFolders[folder] = .some(text) }
            }
        }
        return failures
    }

    func perform(_ step: PublicationStep) throws(Files.Failure) -> Note? {
        switch step {
        case .syncFile(let path):
            try files.syncFile(path)
        case .writeRecord(var record, let durable, let resultInodeOf):
            if let source = resultInodeOf { record.resultInode = try files.inode(of: source) }
            try files.writeRecord(record, durable: durable)
        case .writeFile(let path, let bytes):
            try files.write(bytes, to: path, durable: true)
        case .writeFailedLines(let output, let path):
            try files.writeFailedLines(of: output, to: path)
        case .rename(let from, let to):
            try files.rename(from, to)
        case .moveIfSame(let from, let to, let identity):
            return Self.note(try files.renameIfSame(from, to, identity), from)
        case .unlinkIfSame(let path, let identity):
            return Self.note(try files.unlinkIfSame(path, identity), path)
        case .unlinkIfPresent(let path):
            try files.unlinkIfPresent(path)
        case .archiveIfPresent(let path, let folder):
            guard try files.exists(path) else { return nil }
            try files.ensureFolder(folder)
            let name = PublicationPlan.name(of: path)
            var serial = 1
            while try files.exists("\(folder)/\(serial).\(name)") { serial += 1 }
            try files.rename(path, "\(folder)/\(serial).\(name)")
        case .syncFolder(let path):
            try files.syncFolder(path)
        case .markResult(let path, let mark):
            try files.mark(path, mark)
        case .notePendingHook(let path, let content):
            do throws(Files.Failure) {
                try files.write(content, to: path, durable: false)
            } catch {
                // Its folder may have gone with `state` (rm -rf): made again, and written once more.
                do throws(Files.Failure) {
                    try files.ensureFolder(PublicationPlan.folder(of: path))
                    try files.write(content, to: path, durable: false)
                } catch {
                    return .hookNotNoted(path, reason: "\(error)")
                }
            }
        }
        return nil
    }

    static func note(_ check: ProducerFileCheck, _ path: String) -> Note? {
        switch check {
        case .done: nil
        case .replacedByNewer: .replacedByNewer(path)
        case .alreadyGone: .alreadyGone(path)
        }
    }
}

extension PublicationPlan {
    /// The last component of a path: a file's name in its folder.
    public static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

extension PublicationExecutor: Sendable where Files: Sendable {}
