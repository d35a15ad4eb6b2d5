import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a Swift developer would write first: URLSession data tasks, `concurrency` at a time.
enum URLSessionClient {
    static func run(url: String, bodies: [[UInt8]], concurrency: Int) -> ClientRun {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = concurrency
        configuration.timeoutIntervalForRequest = 3600
        let session = URLSession(configuration: configuration)
        let slots = DispatchSemaphore(value: concurrency)
        let group = DispatchGroup()
        let failures = Mutex(0)
        let started = Date()
        for body in bodies {
            slots.wait()
            group.enter()
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body)
            session.dataTask(with: request) { _, response, error in
                if error != nil || (response as? HTTPURLResponse)?.statusCode != 200 { failures.withLock { $0 += 1 } }
                slots.signal()
                group.leave()
            }.resume()
        }
        group.wait()
        let elapsed = Date().timeIntervalSince(started)
        session.invalidateAndCancel()
        return ClientRun(seconds: elapsed, failed: failures.withLock { $0 })
    }
}
