/// A stable 64-bit fingerprint (FNV-1a) of bytes, in hex: names and ids derived
/// from content, the same on every run.
public enum Fingerprint {
    public static func fnv1a(_ bytes: [UInt8]) -> String {
        String(hash(bytes), radix: 16)
    }

    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100000001b3
        }
        return hash
    }
}
