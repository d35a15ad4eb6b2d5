/// FNV-1a over bytes read a piece at a time: a batch file is fingerprinted while it is
/// validated, never held whole. It gives the value `Fingerprint.hash` gives the whole.
public struct FingerprintStream: Sendable, Equatable {
    public private(set) var value: UInt64 = 0xcbf29ce484222325

    public init() {}

    public mutating func add(_ bytes: [UInt8]) {
        var hash = value
        bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer {
                hash ^= UInt64(byte)
                hash &*= 0x100000001b3
            }
        }
        value = hash
    }
}
