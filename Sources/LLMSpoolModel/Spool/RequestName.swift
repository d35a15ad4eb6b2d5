/// Decides which names in `outgoing` are requests, and their ids.
public enum RequestName {
    /// What a name in `outgoing` is.
    public enum Kind: Equatable, Sendable {
        /// A request with this id.
        case request(id: String)
        /// A batch file (`<name>.jsonl`) with this name.
        case batch(name: String)
        /// Not for the daemon: temporary files, editor droppings, other suffixes.
        case ignored
        /// Looks like a request but its id cannot be used; the reason says why.
        case unusable(reason: String)
        /// A request whose name is unsafe to pass around (control characters, a leading
        /// dash, too long): it is renamed to a safe id first.
        case unsafe(reason: String)
    }

    /// The format that takes a name, and the ending it has; nil for a name no format takes.
    public static func format(of name: String) -> (format: any RequestFormat, suffix: String)? {
        RequestFormatRegistry.match(name).map { ($0.format, $0.suffix) }
    }

    /// The ending of a request's path (`.json`, `.md`), `.json` when none is registered.
    public static func suffix(ofPath path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return RequestFormatRegistry.match(name)?.suffix ?? SpoolLayout.requestSuffix
    }

    /// The longest id, in bytes: leaves room for `.<id>.error.json.tmp` within NAME_MAX.
    public static let maxIDBytes = 200

    public static func classify(_ name: String) -> Kind {
        if name.hasPrefix(SpoolLayout.hiddenPrefix) { return .ignored }  // dot-files: producers' temporaries, vim swap files
        if name.hasSuffix("~") || name == "4913" { return .ignored }  // backup files, vim's write probe
        if name.hasPrefix("#") && name.hasSuffix("#") { return .ignored }  // emacs auto-save
        for suffix in [".swp", ".swx", SpoolLayout.temporarySuffix] where name.hasSuffix(suffix) { return .ignored }
        if name.hasSuffix(SpoolLayout.batchSuffix) { return classifyBatch(String(name.dropLast(SpoolLayout.batchSuffix.count))) }
        guard let match = RequestFormatRegistry.match(name) else { return .ignored }
        let id = match.id
        if id.isEmpty { return .unusable(reason: "the name has no id before \(match.suffix)") }
        // failed/<id>.error.json is the record of request <id>; a request named like one
        // would collide with it.
        if name.hasSuffix(SpoolLayout.errorRecordSuffix) {
            return .unusable(reason: "names ending in \(SpoolLayout.errorRecordSuffix) are reserved for error records")
        }
        if name.hasSuffix(SpoolLayout.batchSummarySuffix) {
            return .unusable(reason: "names ending in \(SpoolLayout.batchSummarySuffix) are reserved for batch summaries")
        }
        // Of any format: the result of id <name>.batch would be incoming/<name>.batch.json,
        // batch <name>'s summary.
        if (id + SpoolLayout.requestSuffix).hasSuffix(SpoolLayout.batchSummarySuffix) {
            return .unusable(reason: "ids ending in \(SpoolLayout.batchSummarySuffix.dropLast(SpoolLayout.requestSuffix.count)) are reserved: "
                + "their result would be a batch's summary, incoming/\(id)\(SpoolLayout.requestSuffix)")
        }
        if id.hasSuffix(SpoolLayout.batchSuffix) {
            return .unusable(reason: "ids ending in \(SpoolLayout.batchSuffix) are reserved for batch outputs")
        }
        if id.utf8.count > maxIDBytes { return .unsafe(reason: "the id is longer than \(maxIDBytes) bytes") }
        if id.hasPrefix("-") { return .unsafe(reason: "the id starts with a dash") }
        if id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || (0x80..<0xA0).contains($0.value) }) {
            return .unsafe(reason: "the id contains control characters")
        }
        if id.unicodeScalars.contains("\u{FFFD}") { return .unsafe(reason: "the name is not valid UTF-8") }
        return .request(id: id)
    }

    /// A batch's name: the rules of ids, but an unsafe one is left in place with a warning
    /// rather than renamed (a batch's outputs take their names from it).
    static func classifyBatch(_ name: String) -> Kind {
        if name.isEmpty { return .unusable(reason: "the name has no name before .jsonl") }
        // incoming/<name>.errors.jsonl is the errors file of batch <name>.
        if (name + SpoolLayout.batchSuffix).hasSuffix(SpoolLayout.batchErrorsSuffix) {
            return .unusable(reason: "names ending in \(SpoolLayout.batchErrorsSuffix) are reserved for batches' errors files")
        }
        switch classify(name + SpoolLayout.requestSuffix) {
        case .request: return .batch(name: name)
        case .unsafe(let reason), .unusable(let reason): return .unusable(reason: reason)
        case .ignored, .batch: return .ignored
        }
    }

    /// The safe id an unsafe name is renamed to: stable, so a rescan finds the same one.
    public static func safeID(forRawName raw: [UInt8]) -> String {
        "unsafe-" + Fingerprint.fnv1a(raw)
    }

    /// Is this raw name (as the directory holds it) valid UTF-8?
    public static func isUTF8(_ raw: [UInt8]) -> Bool {
        RequestValidator.firstInvalidUTF8(raw) == nil
    }

    /// A printable form of any raw name: UTF-8 escaped as log lines escape it, other bytes as \xNN.
    public static func escaped(_ raw: [UInt8]) -> String {
        if isUTF8(raw) { return TextEscaping.escape(String(decoding: raw, as: UTF8.self)) }
        return raw.map { $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C ? String(UnicodeScalar($0)) : "\\x" + TextEscaping.leftPadded(String($0, radix: 16), to: 2) }.joined()
    }
}
