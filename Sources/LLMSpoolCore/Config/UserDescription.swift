import Glibc

/// How messages name a user: `uid 1000 (alice)`, or `uid 1000` for a user without an entry
/// (and a group: `gid 50 (staff)`).
public enum UserDescription {
    public static func ofGroup(_ gid: gid_t) -> String {
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        // The entry's strings point into the buffer: read within its closure.
        return buffer.withUnsafeMutableBufferPointer { strings in
            guard let base = strings.baseAddress, getgrgid_r(gid, &entry, base, strings.count, &found) == 0, found != nil,
                  let name = entry.gr_name else { return "gid \(gid)" }
            return "gid \(gid) (\(Logger.escape(String(cString: name))))"
        }
    }

    public static func of(_ uid: uid_t) -> String {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        // The entry's strings point into the buffer: read within its closure.
        return buffer.withUnsafeMutableBufferPointer { strings in
            guard let base = strings.baseAddress, getpwuid_r(uid, &entry, base, strings.count, &found) == 0, found != nil,
                  let name = entry.pw_name else { return "uid \(uid)" }
            return "uid \(uid) (\(Logger.escape(String(cString: name))))"
        }
    }
}
