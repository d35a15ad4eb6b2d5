/// A publication refused because the spool's names lead outside it (`SpoolLayout.integrityProblem`).
public struct SpoolElsewhereError: Error, CustomStringConvertible {
    public let description: String
}
