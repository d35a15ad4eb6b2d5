/// The known name a mistyped one most likely meant ("concurency" for "concurrency"), for
/// the "did you mean" of an error: a setting or an option misspelt by a letter or two, or
/// with `-` for `_`, names what was meant instead of leaving a person to read a list. Pure.
public enum NearestName {
    /// The nearest of `known` to `typed` by edit distance (insertions, deletions,
    /// substitutions and swaps of two neighbours, each costing one; `-` and `_` count as
    /// the same letter, and case is ignored), when that distance is at most a third of the
    /// typed name's length (at least 1, at most 3) and no other name is as near; else nil.
    public static func suggestion(for typed: String, among known: [String]) -> String? {
        let wanted = normalized(typed)
        guard !wanted.isEmpty, wanted.count <= 64 else { return nil }
        let limit = min(3, max(1, wanted.count / 3))
        var best: (name: String, distance: Int)?
        var tied = false
        for name in known {
            let candidate = normalized(name)
            guard abs(candidate.count - wanted.count) <= limit, candidate.count <= 64 else { continue }
            let distance = editDistance(wanted, candidate)
            guard distance <= limit else { continue }
            if let current = best {
                if distance < current.distance {
                    best = (name, distance)
                    tied = false
                } else if distance == current.distance && name != current.name {
                    tied = true
                }
            } else {
                best = (name, distance)
            }
        }
        guard let best, !tied, best.name != typed else { return nil }
        return best.name
    }

    static func normalized(_ name: String) -> [UInt8] {
        name.utf8.map { byte in
            switch byte {
            case UInt8(ascii: "-"): UInt8(ascii: "_")
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte + 32
            default: byte
            }
        }
    }

    /// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one
    /// substring): what a typo costs.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, before[j - 2] + 1)
                }
                current[j] = value
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
