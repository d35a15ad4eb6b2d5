import Glibc

/// Drops a batch file into `outgoing` as producers should, without holding it: copied a
/// megabyte at a time to a hidden name, fsynced, then renamed into place.
public enum BatchSubmitter {
    /// The name a batch file gets from its path: its base name without `.jsonl`.
    public static func name(ofPath path: String) -> String {
        let base = path.split(separator: "/").last.map(String.init) ?? path
        return base.hasSuffix(SpoolLayout.batchSuffix) ? String(base.dropLast(SpoolLayout.batchSuffix.count)) : base
    }

    public static func submit(from source: String, name: String, layout: SpoolLayout, mode: mode_t) throws {
        guard case .batch(let parsed) = RequestName.classify(name + SpoolLayout.batchSuffix), parsed == name, !name.contains("/") else {
            throw ConfigError("\"\(Logger.escape(name))\" cannot be used as a batch name")
        }
        guard !Syscall.isPresent(layout.batchRequest(name)) else { throw ConfigError("a batch named \(name) is already in outgoing") }
        let input = try FileDescriptor.open(source, O_RDONLY)
        let hidden = "\(layout.outgoing)/\(SpoolLayout.hiddenPrefix)\(name)\(SpoolLayout.batchSuffix)\(SpoolLayout.temporarySuffix)"
        let output = try FileDescriptor.open(hidden, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
        do {
            try FileReader.forEachChunk(fd: input.rawValue, path: source) { chunk in
                try output.writeAll(chunk)
            }
            try output.fsync()
            try output.close()
        } catch {
            do {
                try Syscall.unlinkIfPresent(hidden)
            } catch {
                // The copy's failure is what the caller must hear; a dot-file left behind is
                // ignored by the daemon and removed by `clean`.
            }
            throw error
        }
        try Syscall.rename(hidden, layout.batchRequest(name))
        try Syscall.fsyncDirectory(layout.outgoing)
    }
}
