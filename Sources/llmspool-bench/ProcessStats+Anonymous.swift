import Foundation

extension ProcessStats {
    /// The process's anonymous resident memory (`RssAnon`: its heap, stacks and private
    /// mappings), leaving out the pages of files it maps. Peak RSS counts every page of
    /// every shared library touched (for the daemon about 28 MiB of Swift's runtime,
    /// Foundation, ICU, libcurl and OpenSSL before it has done anything), which other
    /// processes share; the anonymous part is what a program's own work costs.
    static func anonymousMiB(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }
}
