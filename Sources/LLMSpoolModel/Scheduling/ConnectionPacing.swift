/// When a multiplexing endpoint (HTTP/2) may take one more transfer without making libcurl
/// open a connection it does not need. Pure: the engine reports starts, the connection each
/// transfer was placed on, and ends.
///
/// libcurl 7.88 (Debian 12's) waits for a connection being set up only while it does not yet
/// know whether the host multiplexes. Once the first connection is full, every transfer
/// added before the next connection has finished its handshake opens a connection of its
/// own (fixed upstream in curl 8.0, pull request 10456): 5,000 streams at 100 a connection
/// took 391 connections instead of 50. So a new connection is let open only when the
/// established ones are full and no other transfer is still waiting for its connection;
/// transfers that fit on established connections start at once.
public struct ConnectionPacing: Sendable, Equatable {
    /// How many streams libcurl puts on one connection (`CURLMOPT_MAX_CONCURRENT_STREAMS`).
    public let streamsPerConnection: Int
    /// Transfers started whose connection is not known yet (set up, or waiting for one).
    public private(set) var waiting = 0
    /// Streams on each established connection, by the engine's key for the connection.
    private var streams: [Int: Int] = [:]
    private var placed = 0

    public init(streamsPerConnection: Int) {
        self.streamsPerConnection = max(1, streamsPerConnection)
    }

    /// Connections known to carry a transfer now.
    public var connections: Int { streams.count }

    /// Whether one more transfer may start now.
    public var mayStart: Bool {
        waiting == 0 || placed + waiting < streams.count * streamsPerConnection
    }

    public mutating func started() {
        waiting += 1
    }

    /// A waiting transfer reached a connection, `connection` (the engine's key for it, for
    /// example the local port of its socket).
    public mutating func placed(on connection: Int) {
        waiting = max(0, waiting - 1)
        streams[connection, default: 0] += 1
        placed += 1
    }

    /// A placed transfer was placed again on another connection (libcurl reconnects when a
    /// kept-alive connection turns out dead).
    public mutating func moved(from old: Int, to new: Int) {
        guard old != new else { return }
        ended(on: old)
        streams[new, default: 0] += 1
        placed += 1
    }

    /// A transfer ended: on `connection`, or before it reached one (nil).
    public mutating func ended(on connection: Int?) {
        guard let connection else {
            waiting = max(0, waiting - 1)
            return
        }
        guard let count = streams[connection] else { return }
        placed = max(0, placed - 1)
        // An idle connection may stay in libcurl's cache, but is not counted as room: the
        // next transfer placed on it counts it again.
        if count <= 1 { streams[connection] = nil } else { streams[connection] = count - 1 }
    }
}
