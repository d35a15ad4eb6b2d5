import LLMSpoolCore

/// A command line split into options and positionals, with errors that name the option.
struct Arguments {
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var options: [String: String] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// `valued` options take a value (`--port 8080` or `--port=8080`); `switches` take none.
    init(_ arguments: [String], valued: Set<String>, switches: Set<String>) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positionals.append(contentsOf: arguments[index...])
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positionals.append(argument)
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if name == "-h" { name = "--help" }
            if switches.contains(name) {
                guard inlineValue == nil else { throw UsageError(description: "\(name) takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                if let inlineValue {
                    options[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError(description: "\(name) needs a value") }
                    options[name] = arguments[index]
                    index += 1
                }
            } else {
                let meant = NearestName.suggestion(for: name, among: (valued.union(switches)).sorted()).map { " (did you mean \($0)?)" } ?? ""
                throw UsageError(description: "unknown option \(name)\(meant)")
            }
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
    subscript(_ name: String) -> String? { options[name] }

    func integer(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = options[name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(description: "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
        }
        return number
    }
}
