import Glibc

/// The intent records of the background lane on disk, `state/remote/<group>.json`: each
/// write is durable (fsync, rename, fsync of the folder) because it is the commit point
/// that keeps a restart from creating a group's remote batch twice.
public struct RemoteIntentStore: Sendable {
    public let layout: SpoolLayout

    public init(layout: SpoolLayout) {
        self.layout = layout
    }

    /// Records `intent`; returns only once it survives a crash.
    public func write(_ intent: RemoteIntent) throws {
        guard RemoteIntent.isValidGroup(intent.group) else {
            throw ConfigError("the group id \"\(intent.group)\" cannot name a file in \(layout.remote)")
        }
        // Written as it is encoded: a record of 50,000 members is never whole in memory.
        try DurableFile.write(to: layout.remoteIntent(intent.group), mode: layout.fileMode) { emit in
            try intent.encode { (piece: [UInt8]) throws in try emit(piece) }
        }
    }

    /// Removes a finished group's record, durably.
    public func remove(group: String) throws {
        try Syscall.unlinkIfPresent(layout.remoteIntent(group))
        try Syscall.fsyncDirectory(layout.remote)
    }

    /// One record found at start, or why its file could not be read (the file is named
    /// and left in place: a record is never deleted for being unreadable).
    public enum Found: Sendable, Equatable {
        case intent(RemoteIntent)
        case unreadable(path: String, problem: String)
    }

    /// Every record in `state/remote`, by name; hidden temporaries are not records.
    public func loadAll(limit: Int = 256 << 20) throws -> [Found] {
        try groups().map { load(group: $0, limit: limit) }
    }

    /// The groups recorded in `state/remote`, by name; hidden temporaries are not records.
    public func groups() throws -> [String] {
        // Names that are not UTF-8 cannot be group ids, so they are not records.
        let names = try Syscall.listDirectoryRaw(layout.remote).compactMap { String(validating: $0, as: UTF8.self) }
        return names.filter { $0.hasSuffix(SpoolLayout.requestSuffix) && !$0.hasPrefix(SpoolLayout.hiddenPrefix) }.sorted()
            .map { String($0.dropLast(SpoolLayout.requestSuffix.count)) }
    }

    /// The record of `group`, or why it could not be read.
    public func load(group: String, limit: Int = 256 << 20) -> Found {
        let path = layout.remoteIntent(group)
        do {
            let bytes = try FileReader.prefix(path: path, limit: limit)
            return .intent(try RemoteIntent.decode(bytes))
        } catch let problem as RemoteIntent.Problem {
            return .unreadable(path: path, problem: problem.description)
        } catch {
            return .unreadable(path: path, problem: "\(error)")
        }
    }
}
