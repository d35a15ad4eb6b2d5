/// Which file is a group's member, and the ids of new groups.
enum LaneMembership {
    /// Whether the file found is the request recorded in the group: a new file under the
    /// same name is another request, and the group's answer is not its answer.
    static func isSameRequest(recorded: FileIdentity?, found: FileIdentity?) -> Bool {
        guard let recorded, let found else { return recorded == nil }
        return found.isSameInstance(as: recorded)
    }

    /// A fresh group id: a file name and a metadata value (`RemoteIntent.isValidGroup`),
    /// random so that no two daemons or runs share one.
    static func newGroupID() -> String {
        let random = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return "g" + String(repeating: "0", count: 16 - random.count) + random
    }
}
