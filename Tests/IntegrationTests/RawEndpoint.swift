import Foundation
import Glibc
import Synchronization

/// An endpoint on 127.0.0.1 that answers every request with the same raw bytes and closes:
/// for responses libmicrohttpd will not send (a header line of megabytes).
final class RawEndpoint: Sendable {
    let port: UInt16
    private let listener: Int32
    private let state = State()

    private final class State: Sendable {
        let served = Mutex(0)
        let done = Mutex(false)
    }

    init(response: [UInt8]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else { close(fd); throw HarnessError("bind/listen: errno \(errno)") }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let state = self.state
        let thread = Thread {
            while !state.done.withLock({ $0 }) {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { if errno == EINTR { continue } else { return } }
                RawEndpoint.readRequest(client)
                state.served.withLock { $0 += 1 }
                _ = response.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
        thread.start()
    }

    var baseURL: String { "http://127.0.0.1:\(port)/v1" }
    /// Requests answered so far.
    var count: Int { state.served.withLock { $0 } }

    func stop() {
        state.done.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// Reads the head and a Content-Length body, so the client sees its upload complete.
    private static func readRequest(_ fd: Int32) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            received += buffer[0..<count]
            let text = String(decoding: received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let head = text[..<end.lowerBound].lowercased()
            let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            if text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length { return }
        }
    }
}
