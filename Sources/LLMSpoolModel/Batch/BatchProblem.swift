/// A problem of a batch file, at its line (nil for the file as a whole).
public struct BatchProblem: Sendable, Equatable, CustomStringConvertible {
    public var line: Int?
    public var problem: RequestProblem

    public init(line: Int?, _ problem: RequestProblem) {
        self.line = line
        self.problem = problem
    }

    public var description: String {
        guard let line else { return problem.message }
        if let column = problem.column { return "line \(line), column \(column): \(problem.message)" }
        return "line \(line): \(problem.message)"
    }
}
