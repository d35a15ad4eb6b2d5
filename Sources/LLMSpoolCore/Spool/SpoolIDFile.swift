import Glibc

/// `state/.spool-id`: the spool's id, made by the first daemon that starts on it. A share
/// mounted again has a new device number; the id read through its root says it is still
/// this spool (`SpoolRootIdentity.judge`).
enum SpoolIDFile {
    /// The id, made first when there is none (or what is there is no id). Daemons starting
    /// together on a shared spool each write their own under a name of their own and link
    /// it into place: one wins, and every one reads the winner's.
    static func readOrMake(_ layout: SpoolLayout, logger: Logger) throws -> String {
        switch read(layout.spoolIDFile) {
        case .id(let id):
            return id
        case .unreadable(let reason):
            throw SpoolIDUnreadable(path: layout.spoolIDFile, reason: reason)
        case .unusable:
            logger.warning("the spool's id file holds no id; a new one is made", ["path": LogValue(layout.spoolIDFile)])
            try setAside(layout)
            try place(SpoolID.format(random(), random()), layout)
        case .missing:
            try place(SpoolID.format(random(), random()), layout)
        }
        // A filesystem without hard links writes the file in place: a moment to finish.
        for _ in 0..<20 {
            if case .id(let id) = read(layout.spoolIDFile) { return id }
            usleep(50_000)
        }
        throw SpoolIDUnreadable(path: layout.spoolIDFile, reason: "no id after it was made")
    }

    /// Keeps the file while the daemon runs at its pinned root: made again with the pin's
    /// id when removed (with all of `state`, say), and another valid id there (a daemon's
    /// start replaced a broken file) becomes the pin's. Otherwise the next remount would
    /// hold the spool until a restart.
    static func keep(_ layout: SpoolLayout, pin: SharedRootPin, logger: Logger) {
        guard let pinned = pin.identity.spoolID else { return }
        switch read(layout.spoolIDFile) {
        case .id(pinned):
            return
        case .id(let other):
            logger.warning("the spool's id changed (another daemon made it again); it is this spool's now", ["path": LogValue(layout.spoolIDFile)])
            pin.adopt(spoolID: other)
        case .missing:
            logger.warning("the spool's id file was removed; it is written again", ["path": LogValue(layout.spoolIDFile)])
            logger.bestEffort("writing the spool's id again") { try place(pinned, layout) }
        case .unusable:
            logger.warning("the spool's id file holds no id; it is written again", ["path": LogValue(layout.spoolIDFile)])
            logger.bestEffort("writing the spool's id again") {
                try setAside(layout)
                try place(pinned, layout)
            }
        case .unreadable:
            // Said by the look that needs it (a remount's), which names the reason.
            return
        }
    }

    /// What the file at `path` holds. Only its own name is not followed: the caller has
    /// looked at `state` (`SpoolLayout.inspectFolders`).
    static func read(_ path: String) -> SpoolRootIdentity.IDRead {
        do {
            return SpoolID.parse(try FileReader.prefix(path: path, limit: 256)).map { .id($0) } ?? .unusable
        } catch let error as SystemError where error.errno == ENOENT {
            return .missing
        } catch {
            return .unreadable("\(error)")
        }
    }

    /// Puts `id` at the file's name unless another daemon's is there first.
    private static func place(_ id: String, _ layout: SpoolLayout) throws {
        let own = "\(layout.state)/.spool-id.\(SpoolID.format(random(), 0).prefix(16)).tmp"
        try DurableFile.write(SpoolID.fileContent(id), to: own, mode: layout.fileMode, syncDirectory: false)
        defer {
            do { _ = try Syscall.unlinkIfPresent(own) } catch {
                // A hidden temporary left behind is ignored by every reader.
            }
        }
        do {
            try Syscall.link(own, layout.spoolIDFile)
        } catch let error as SystemError where error.errno == EEXIST {
            // Another daemon's won.
        } catch let error as SystemError where error.errno == EPERM || error.errno == ENOTSUP || error.errno == ENOSYS || error.errno == EOPNOTSUPP {
            // A filesystem without hard links: made in place, only if no other is there.
            do {
                let file = try FileDescriptor.open(layout.spoolIDFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
                try file.writeAll(SpoolID.fileContent(id))
                try file.fsync()
            } catch let error as SystemError where error.errno == EEXIST {}
        }
        try Syscall.fsyncDirectory(layout.state)
    }

    /// A file that holds no id is kept aside for whoever wants to see it, not overwritten.
    private static func setAside(_ layout: SpoolLayout) throws {
        do {
            try Syscall.rename(layout.spoolIDFile, "\(layout.state)/.spool-id.unusable.\(SpoolID.format(random(), 0).prefix(16))")
        } catch let error as SystemError where error.errno == ENOENT {
            // Another daemon set it aside first.
        }
    }

    private static func random() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }
}

/// The spool's id file is there but cannot be read.
struct SpoolIDUnreadable: Error, CustomStringConvertible {
    let path: String
    let reason: String
    var description: String { "\(path) cannot be read: \(reason)" }
}
