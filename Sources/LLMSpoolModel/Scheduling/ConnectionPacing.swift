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
///
/// A handshake takes milliseconds. Once one has waited `handshakeAllowanceSeconds` (a server
/// that accepts and never answers), nothing is held back until the waits end: otherwise one
/// hung handshake at a time, each until `connect_timeout_seconds`, was the endpoint's whole
/// pace (1,000 requests against such a server took hours where HTTP/1.1 took seconds).
public struct ConnectionPacing: Sendable, Equatable {
    /// How long a transfer waiting for its connection holds further starts back.
    public static let handshakeAllowanceSeconds = 2.0
    /// How many streams libcurl puts on one connection (`CURLMOPT_MAX_CONCURRENT_STREAMS`).
    public let streamsPerConnection: Int
    /// When each transfer started whose connection is not known yet (set up, or waiting
    /// for one), oldest first.
    private var waitingSince: [Double] = []
    /// Transfers started whose connection is not known yet.
    public var waiting: Int { waitingSince.count }
    /// Streams on each established connection, by the engine's key for the connection.
    private var streams: [Int: Int] = [:]
    private var placed = 0

    public init(streamsPerConnection: Int) {
        self.streamsPerConnection = max(1, streamsPerConnection)
    }

    /// Connections known to carry a transfer now.
    public var connections: Int { streams.count }

    /// Whether one more transfer may start at `now`.
    public func mayStart(at now: Double) -> Bool {
        guard let oldest = waitingSince.first, now - oldest < Self.handshakeAllowanceSeconds else { return true }
        return placed + waiting < streams.count * streamsPerConnection
    }

    /// Whether a connection has been awaited past the allowance: a transfer started now
    /// should open its own rather than wait for that one (libcurl's `CURLOPT_PIPEWAIT`
    /// would hold it behind the hung handshake).
    public func handshakeOverdue(at now: Double) -> Bool {
        guard let oldest = waitingSince.first else { return false }
        return now - oldest >= Self.handshakeAllowanceSeconds
    }

    /// When a start held back now may go without any other event: the oldest wait's
    /// allowance ends.
    public func nextChange(after now: Double) -> Double? {
        guard let oldest = waitingSince.first, now - oldest < Self.handshakeAllowanceSeconds else { return nil }
        return oldest + Self.handshakeAllowanceSeconds
    }

    public mutating func started(at now: Double) {
        waitingSince.append(now)
    }

    /// The oldest wait ends: libcurl does not say which transfer reached a connection or
    /// ended, and the oldest is the likeliest.
    private mutating func stopWaiting() {
        if !waitingSince.isEmpty { waitingSince.removeFirst() }
    }

    /// A waiting transfer reached a connection, `connection` (the engine's key for it, for
    /// example the local port of its socket).
    public mutating func placed(on connection: Int) {
        stopWaiting()
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
            stopWaiting()
            return
        }
        guard let count = streams[connection] else { return }
        placed = max(0, placed - 1)
        // An idle connection may stay in libcurl's cache, but is not counted as room: the
        // next transfer placed on it counts it again.
        if count <= 1 { streams[connection] = nil } else { streams[connection] = count - 1 }
    }
}
