import Foundation
import Glibc

/// sd_notify without libsystemd: datagrams to `$NOTIFY_SOCKET` (a path, or an abstract
/// name starting with "@"). Does nothing when the variable is not set.
public struct SystemdNotifier: Sendable {
    public let socketPath: String?
    /// Half the watchdog interval systemd asked for, when it asked.
    public let watchdogInterval: Double?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let text = environment["WATCHDOG_USEC"], let usec = Double(text), usec > 0,
           environment["WATCHDOG_PID"].map({ Int32($0) == getpid() }) ?? true {
            watchdogInterval = usec / 2_000_000
        } else {
            watchdogInterval = nil
        }
    }

    public var enabled: Bool { socketPath != nil }

    /// Sends one message such as "READY=1" or "STATUS=..."; errors are ignored, as sd_notify does.
    public func send(_ message: String) {
        guard let socketPath else { return }
        let opened = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard opened >= 0 else { return }
        let socketFile = FileDescriptor(owning: opened)
        let fd = socketFile.rawValue
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let bytes = Array(message.utf8)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), pointer, length) }
            }
        }
    }
}
