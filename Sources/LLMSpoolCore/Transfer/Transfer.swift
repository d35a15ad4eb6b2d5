import CCurl
import Foundation
import Glibc

/// One HTTP attempt in flight: its curl handle, its two files and what has arrived.
/// Owned by the engine's thread; libcurl calls back into it on that thread only.
final class Transfer {
    let task: TaskDescriptor
    let handle: UnsafeMutableRawPointer
    let requestFD: Int32
    let partialFD: Int32
    let partialPath: String
    let startedAt = Date()
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    var headers: [String: String] = [:]
    var bytesSent: Int64 = 0
    var bytesReceived: Int64 = 0
    var diskError: SystemError?
    var readError: SystemError?

    init(task: TaskDescriptor, handle: UnsafeMutableRawPointer, requestFD: Int32, partialFD: Int32, partialPath: String) {
        self.task = task
        self.handle = handle
        self.requestFD = requestFD
        self.partialFD = partialFD
        self.partialPath = partialPath
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// libcurl asks for the next piece of the body: it comes straight from the request file.
    func readBody(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        do {
            let count = try Syscall.read(requestFD, into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity), path: task.requestPath)
            bytesSent += Int64(count)
            return count
        } catch let error as SystemError {
            readError = error
            return llms_curl_readfunc_abort
        } catch {
            return llms_curl_readfunc_abort
        }
    }

    /// Response bytes go to the `.partial` as they arrive.
    func writeBody(_ buffer: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        do {
            try Syscall.writeAll(partialFD, UnsafeRawBufferPointer(start: buffer, count: count), path: partialPath)
            bytesReceived += Int64(count)
            return count
        } catch let error as SystemError {
            diskError = error
            return 0  // anything but `count` makes libcurl stop with CURLE_WRITE_ERROR
        } catch {
            return 0
        }
    }

    func receiveHeader(_ buffer: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        let line = String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            headers.removeAll()  // a new response (after 100 Continue or a redirect) starts afresh
        } else if let colon = line.firstIndex(of: ":"), headers.count < 100 {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = value
        }
        return count
    }
}
