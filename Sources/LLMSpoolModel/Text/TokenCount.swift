/// Token counts come from the endpoint and from records anyone can edit: sums saturate
/// instead of trapping on overflow.
public enum TokenCount {
    public static func sum(_ a: Int, _ b: Int) -> Int {
        let (result, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? Int.max : Int.min) : result
    }
}
