import CYAML

/// Front matter read with libyaml's event parser, turned into the model's plain tree.
/// Events, not the document loader: the loader takes a whole document before anything can
/// be judged, and libyaml's scanner costs time in the square of the nesting (a 240 KB file
/// of `[[[…` held intake for 41 s), so the limits are checked as each event arrives and
/// the parse stops at the first one passed. Anchors and aliases are expanded, within
/// limits of nodes and of text: a few lines of aliases can otherwise stand for billions of
/// nodes, or a 2 MB file for 3 GB of text.
public enum LibYAML {
    /// The most nodes a document may expand to.
    public static let maxNodes = 100_000
    /// The most bytes of scalar text a document may expand to: the default
    /// `max_request_bytes`, which the body built from it could not pass anyway.
    public static let maxExpandedBytes = 32 << 20
    /// The deepest nesting (an alias counts the nesting of what it stands for).
    public static let maxDepth = 64

    /// The reader the daemon gives the prompt format.
    public static let reader: YAMLReader = { bytes in parse(bytes) }

    /// The first document of `bytes` (nil when it is empty), or where it stops being YAML.
    public static func parse(_ bytes: [UInt8]) -> Result<YAMLNode?, YAMLProblem> {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            return .failure(YAMLProblem("libyaml could not start (out of memory)", line: 1, column: 1))
        }
        defer { yaml_parser_delete(&parser) }
        return bytes.withUnsafeBufferPointer { buffer -> Result<YAMLNode?, YAMLProblem> in
            // libyaml reads the input while parsing; the buffer outlives the call.
            yaml_parser_set_input_string(&parser, buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            var builder = TreeBuilder()
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return .failure(problem(parser)) }
                defer { yaml_event_delete(&event) }
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return .success(builder.root)
                case YAML_DOCUMENT_END_EVENT:
                    builder.documentEnded = true
                case YAML_DOCUMENT_START_EVENT where builder.documentEnded:
                    // A `---` line inside the front matter: what follows would be dropped.
                    let mark = event.start_mark
                    return .failure(YAMLProblem("the front matter holds a second YAML document (a \"---\" line inside it); "
                        + "one document only", line: Int(mark.line) + 1, column: Int(mark.column) + 1))
                default:
                    if let failure = builder.take(event) { return .failure(failure) }
                }
            }
        }
    }

    static func problem(_ parser: yaml_parser_t) -> YAMLProblem {
        var message = parser.problem.map { String(cString: $0) } ?? "not valid YAML"
        if let context = parser.context.map({ String(cString: $0) }) { message += " " + context }
        let mark = parser.problem_mark
        return YAMLProblem(message, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    /// A node with what it expands to: an alias of it costs as much again.
    struct Sized {
        var node: YAMLNode
        var nodes: Int
        var bytes: Int
        /// Levels below it (0 for a scalar).
        var height: Int
    }

    /// A sequence or mapping not closed yet.
    struct OpenNode {
        var isMapping: Bool
        var anchor: String?
        var line: Int
        var column: Int
        var items: [YAMLNode] = []
        var pairs: [(key: YAMLNode, value: YAMLNode)] = []
        var pendingKey: YAMLNode?
        var nodes = 1
        var bytes = 0
        var height = 0
    }

    /// Builds the tree from events, holding the limits as it goes.
    struct TreeBuilder {
        var open: [OpenNode] = []
        var anchors: [String: Sized] = [:]
        /// Every anchor named so far, the open nodes' too: an alias to one of those would
        /// stand for the node it is inside, and a name used twice for two nodes.
        var anchorNames = Set<String>()
        var documentEnded = false
        var totalNodes = 0
        var totalBytes = 0
        var root: YAMLNode?

        /// Nil when the event is taken, else why the document is refused.
        mutating func take(_ event: yaml_event_t) -> YAMLProblem? {
            let line = Int(event.start_mark.line) + 1
            let column = Int(event.start_mark.column) + 1
            switch event.type {
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let text = scalar.value.map { String(decoding: UnsafeBufferPointer(start: $0, count: scalar.length), as: UTF8.self) } ?? ""
                var quoted = scalar.style != YAML_PLAIN_SCALAR_STYLE && scalar.style != YAML_ANY_SCALAR_STYLE
                switch name(scalar.tag) {
                case nil: break
                // `!!str 12` and `! 12` are strings, as quotes make them.
                case "tag:yaml.org,2002:str"?, "!"?: quoted = true
                case let tag?: return unsupported(tag: tag, line: line, column: column)
                }
                // A merge key would reach the body as a member named "<<".
                if !quoted, text == "<<", let parent = open.last, parent.isMapping, parent.pendingKey == nil {
                    return YAMLProblem("merge keys (<<) are not supported: write the keys out", line: line, column: column)
                }
                let anchor = name(scalar.anchor)
                if let anchor, let problem = named(anchor, line: line, column: column) { return problem }
                return add(Sized(node: .scalar(text, quoted: quoted, line: line, column: column), nodes: 1, bytes: scalar.length, height: 0),
                           anchor: anchor, line: line, column: column)
            case YAML_ALIAS_EVENT:
                guard let anchor = name(event.data.alias.anchor), anchorNames.contains(anchor) else {
                    return YAMLProblem("an alias names no anchor defined before it", line: line, column: column)
                }
                guard let sized = anchors[anchor] else {
                    return YAMLProblem("an alias inside the node its anchor names (*\(TextEscaping.escape(anchor)) stands for itself)", line: line, column: column)
                }
                if case .scalar("<<", false, _, _) = sized.node, let parent = open.last, parent.isMapping, parent.pendingKey == nil {
                    return YAMLProblem("merge keys (<<) are not supported: write the keys out", line: line, column: column)
                }
                return add(sized, anchor: nil, line: line, column: column)
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                if let problem = limits(depth: open.count, height: 0, nodes: 1, bytes: 0, line: line, column: column) { return problem }
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                let anchor = isMapping ? name(event.data.mapping_start.anchor) : name(event.data.sequence_start.anchor)
                let tag = isMapping ? name(event.data.mapping_start.tag) : name(event.data.sequence_start.tag)
                if let tag, tag != (isMapping ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq") {
                    return unsupported(tag: tag, line: line, column: column)
                }
                if let anchor, let problem = named(anchor, line: line, column: column) { return problem }
                open.append(OpenNode(isMapping: isMapping, anchor: anchor, line: line, column: column))
                return nil
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                guard let closed = open.popLast() else { return nil }
                let node: YAMLNode = closed.isMapping ? .mapping(closed.pairs, line: closed.line, column: closed.column)
                                                      : .sequence(closed.items, line: closed.line, column: closed.column)
                // Its nodes and bytes were counted as they came; only its place is left.
                let sized = Sized(node: node, nodes: closed.nodes, bytes: closed.bytes, height: closed.height)
                if let anchor = closed.anchor { anchors[anchor] = sized }
                place(sized)
                return nil
            default:
                return nil
            }
        }

        /// A scalar or an alias's node, counted and placed.
        mutating func add(_ sized: Sized, anchor: String?, line: Int, column: Int) -> YAMLProblem? {
            if let problem = limits(depth: open.count, height: sized.height, nodes: sized.nodes, bytes: sized.bytes, line: line, column: column) {
                return problem
            }
            if let anchor { anchors[anchor] = sized }
            place(sized)
            return nil
        }

        /// Counts a node about to be placed at `depth`, and refuses it past a limit.
        mutating func limits(depth: Int, height: Int, nodes: Int, bytes: Int, line: Int, column: Int) -> YAMLProblem? {
            guard depth + height < maxDepth else {
                return YAMLProblem("the front matter nests deeper than \(maxDepth) levels", line: line, column: column)
            }
            totalNodes += nodes
            totalBytes += bytes
            guard totalNodes <= maxNodes else {
                return YAMLProblem("the front matter expands to more than \(maxNodes) values (aliases?)", line: line, column: column)
            }
            guard totalBytes <= maxExpandedBytes else {
                return YAMLProblem("the front matter expands to more than \(maxExpandedBytes >> 20) MiB of text (aliases?)", line: line, column: column)
            }
            // Every open node holds it: an alias of any of them costs it again.
            for index in open.indices {
                open[index].nodes += nodes
                open[index].bytes += bytes
                open[index].height = max(open[index].height, depth - index + height)
            }
            return nil
        }

        mutating func place(_ sized: Sized) {
            guard var parent = open.popLast() else {
                root = sized.node
                return
            }
            if parent.isMapping {
                if let key = parent.pendingKey {
                    parent.pairs.append((key, sized.node))
                    parent.pendingKey = nil
                } else {
                    parent.pendingKey = sized.node
                }
            } else {
                parent.items.append(sized.node)
            }
            open.append(parent)
        }

        /// Notes an anchor's name; a name given twice is refused, as libyaml's loader did.
        mutating func named(_ anchor: String, line: Int, column: Int) -> YAMLProblem? {
            guard anchorNames.insert(anchor).inserted else {
                return YAMLProblem("the anchor &\(TextEscaping.escape(anchor)) is defined twice", line: line, column: column)
            }
            return nil
        }

        /// Tags other than a string's: dropped, `!!binary aGVsbG8=` was sent as the text
        /// "aGVsbG8=" and `!!int` as whatever the value looked like.
        func unsupported(tag: String, line: Int, column: Int) -> YAMLProblem {
            let shown = tag.hasPrefix("tag:yaml.org,2002:") ? "!!" + tag.dropFirst("tag:yaml.org,2002:".count) : tag
            return YAMLProblem("YAML tags such as \(TextEscaping.escape(shown)) are not supported: write the value plainly, or in quotes for a string",
                               line: line, column: column)
        }

        func name(_ anchor: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            anchor.map { String(cString: UnsafePointer($0)) }
        }
    }
}
