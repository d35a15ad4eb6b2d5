/// The kernel's table of file locks (`/proc/locks`), read for who holds the spool's lock:
/// a pid in a status file proves nothing by itself (a pid is used again, a status file
/// outlives a kill -9), a lock on `state/.lock` held by that pid does.
public enum LockTable {
    /// The pids holding a `flock` on a file with inode `inode`, as `text` (the table) lists
    /// them; a waiter's line (`->`) holds nothing. By inode alone, on any device: the table
    /// prints the filesystem's own device, which on btrfs (a device per subvolume) and
    /// overlayfs is not the one `stat` gives. A caller that asks whether one pid holds the
    /// file is not misled by another file of the same inode elsewhere unless that very
    /// process holds it.
    public static func flockHolders(inode: UInt64, in text: String) -> [Int32] {
        let inodeText = String(inode)
        var pids: [Int32] = []
        for line in text.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 26097 fe:00:16228361 0 EOF"
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]), pid > 0 else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3, file[2] == inodeText else { continue }
            pids.append(pid)
        }
        return pids
    }
}
