/// The request file formats the daemon reads. A new format adds its files and one line to
/// `all`. When files of several formats share an id (`a.json` and `a.md`), they are
/// taken one after the other, never at once (see `TransferEngine`).
public enum RequestFormatRegistry {
    public static let all: [any RequestFormat] = [
        JSONRequestFormat(),
        PromptRequestFormat(),
    ]

    /// The format of this id; the JSON format for an unknown one rather than a trap.
    public static func format(id: String) -> any RequestFormat {
        all.first { $0.id == id } ?? all[0]
    }

    /// The format and id of a name in `outgoing`, or nil when no format takes the name.
    public static func match(_ name: String) -> (format: any RequestFormat, id: String, suffix: String)? {
        for format in all {
            for suffix in format.suffixes where name.hasSuffix(suffix) {
                return (format, String(name.dropLast(suffix.count)), suffix)
            }
        }
        return nil
    }

    /// Every ending a request name may have, in registration order.
    public static var suffixes: [String] { all.flatMap(\.suffixes) }
}
