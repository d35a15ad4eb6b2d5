import Glibc

/// How messages name a user: `uid 1000 (alice)`, or `uid 1000` for a user without an entry
/// (and a group: `gid 50 (staff)`).
public enum UserDescription {
    public static func of(_ uid: uid_t) -> String {
        named("uid \(uid)", passwd(), { getpwuid_r(uid, $0, $1, $2, $3) }, name: { $0.pw_name })
    }

    public static func ofGroup(_ gid: gid_t) -> String {
        named("gid \(gid)", group(), { getgrgid_r(gid, $0, $1, $2, $3) }, name: { $0.gr_name })
    }

    /// `label (name)` from a `get*_r` lookup, or `label` alone when it finds no entry.
    private static func named<Entry>(_ label: String, _ empty: Entry,
                                     _ lookUp: (UnsafeMutablePointer<Entry>, UnsafeMutablePointer<CChar>, Int,
                                                UnsafeMutablePointer<UnsafeMutablePointer<Entry>?>) -> Int32,
                                     name: (Entry) -> UnsafeMutablePointer<CChar>?) -> String {
        var entry = empty
        var found: UnsafeMutablePointer<Entry>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        // The entry's strings point into the buffer: read within its closure.
        return buffer.withUnsafeMutableBufferPointer { strings in
            guard let base = strings.baseAddress, lookUp(&entry, base, strings.count, &found) == 0, found != nil,
                  let name = name(entry) else { return label }
            return "\(label) (\(Logger.escape(String(cString: name))))"
        }
    }
}
