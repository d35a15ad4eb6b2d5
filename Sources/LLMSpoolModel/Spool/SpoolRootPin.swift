/// The device and inode of the spool's root as the daemon found it at start. Paths are
/// followed by name: a root unmounted, removed, or swapped for a link while the daemon
/// runs would have answers published into whatever folder now has the name (and the
/// requests, still in the real `outgoing`, sent again once it is back).
public struct SpoolRootPin: Sendable, Equatable {
    public let device: UInt64
    public let inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}
