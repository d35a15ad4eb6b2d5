/// The kernel's table of file locks (`/proc/locks`), read for who holds the spool's lock:
/// a pid in a status file proves nothing by itself (a pid is used again, a status file
/// outlives a kill -9), a lock on `state/.lock` held by that pid does.
public enum LockTable {
    /// The pids holding a `flock` on the file of device `major:minor` and `inode`, as
    /// `text` (the table) lists them; a waiter's line (`->`) holds nothing.
    public static func flockHolders(major: UInt32, minor: UInt32, inode: UInt64, in text: String) -> [Int32] {
        let file = hex(major) + ":" + hex(minor) + ":" + String(inode)
        var pids: [Int32] = []
        for line in text.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 26097 fe:00:16228361 0 EOF"
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == file, let pid = Int32(fields[4]), pid > 0 else { continue }
            pids.append(pid)
        }
        return pids
    }

    /// Linux's split of a `dev_t` into its major and minor numbers.
    public static func deviceNumbers(_ device: UInt64) -> (major: UInt32, minor: UInt32) {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & 0xffff_f000)
        let minor = (device & 0xff) | ((device >> 12) & 0xffff_ff00)
        return (UInt32(truncatingIfNeeded: major), UInt32(truncatingIfNeeded: minor))
    }

    /// At least two hex digits, as the table prints them.
    private static func hex(_ number: UInt32) -> String {
        let digits = String(number, radix: 16)
        return digits.count < 2 ? "0" + digits : digits
    }
}
