import Glibc

/// The spool's folders and side files on disk.
extension SpoolLayout {
    /// The escaped original name of a request renamed to a safe id, if it was.
    public func loadOriginalName(_ id: String) -> String? {
        guard let bytes = try? FileReader.prefix(path: originalName(id), limit: 4096), !bytes.isEmpty else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Creates the spool's folders that are missing, with `directoryMode`.
    public func create() throws {
        for directory in folders {
            do { try Syscall.mkdir(directory, mode: directoryMode) } catch let error as SystemError where error.errno == EEXIST {}
        }
    }
}
