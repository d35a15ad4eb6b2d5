/// Decides which names in `outgoing` are requests, and their ids.
public enum RequestName {
    /// What a name in `outgoing` is.
    public enum Kind: Equatable, Sendable {
        /// A request with this id.
        case request(id: String)
        /// Not for the daemon: temporary files, editor droppings, other suffixes.
        case ignored
        /// Looks like a request but its id cannot be used; the reason says why.
        case unusable(reason: String)
    }

    public static func classify(_ name: String) -> Kind {
        if name.hasPrefix(SpoolLayout.hiddenPrefix) { return .ignored }  // dot-files: producers' temporaries, vim swap files
        if name.hasSuffix("~") || name == "4913" { return .ignored }  // backup files, vim's write probe
        if name.hasPrefix("#") && name.hasSuffix("#") { return .ignored }  // emacs auto-save
        for suffix in [".swp", ".swx", SpoolLayout.temporarySuffix] where name.hasSuffix(suffix) { return .ignored }
        guard name.hasSuffix(SpoolLayout.requestSuffix) else { return .ignored }
        let id = String(name.dropLast(SpoolLayout.requestSuffix.count))
        if id.isEmpty { return .unusable(reason: "the name has no id before .json") }
        // failed/<id>.error.json is the record of request <id>; a request named like one
        // would collide with it.
        if name.hasSuffix(SpoolLayout.errorRecordSuffix) {
            return .unusable(reason: "names ending in \(SpoolLayout.errorRecordSuffix) are reserved for error records")
        }
        return .request(id: id)
    }
}
