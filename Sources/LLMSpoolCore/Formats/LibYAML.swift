import CYAML

/// Front matter read with libyaml's document loader, turned into the model's plain tree.
/// Anchors and aliases are expanded, within limits: a few lines of aliases can otherwise
/// stand for billions of nodes.
public enum LibYAML {
    /// The most nodes a document may expand to.
    public static let maxNodes = 100_000
    /// The deepest nesting (which also ends an alias that contains itself).
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
            // libyaml reads the input while loading; the buffer outlives the call.
            yaml_parser_set_input_string(&parser, buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            var document = yaml_document_t()
            guard yaml_parser_load(&parser, &document) == 1 else {
                return .failure(problem(parser))
            }
            defer { yaml_document_delete(&document) }
            guard let root = yaml_document_get_root_node(&document) else { return .success(nil) }
            var budget = maxNodes
            return convert(root, in: &document, depth: 0, budget: &budget).map { Optional($0) }
        }
    }

    static func problem(_ parser: yaml_parser_t) -> YAMLProblem {
        var message = parser.problem.map { String(cString: $0) } ?? "not valid YAML"
        if let context = parser.context.map({ String(cString: $0) }) { message += " " + context }
        let mark = parser.problem_mark
        return YAMLProblem(message, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    static func convert(_ node: UnsafeMutablePointer<yaml_node_t>, in document: inout yaml_document_t, depth: Int,
                        budget: inout Int) -> Result<YAMLNode, YAMLProblem> {
        let line = Int(node.pointee.start_mark.line) + 1
        let column = Int(node.pointee.start_mark.column) + 1
        budget -= 1
        guard budget >= 0 else {
            return .failure(YAMLProblem("the front matter expands to more than \(maxNodes) values (aliases?)", line: line, column: column))
        }
        guard depth < maxDepth else {
            return .failure(YAMLProblem("the front matter nests deeper than \(maxDepth) levels", line: line, column: column))
        }
        switch node.pointee.type {
        case YAML_SCALAR_NODE:
            let scalar = node.pointee.data.scalar
            let text = scalar.value.map { String(decoding: UnsafeBufferPointer(start: $0, count: scalar.length), as: UTF8.self) } ?? ""
            let quoted = scalar.style != YAML_PLAIN_SCALAR_STYLE && scalar.style != YAML_ANY_SCALAR_STYLE
            return .success(.scalar(text, quoted: quoted, line: line, column: column))
        case YAML_SEQUENCE_NODE:
            var items: [YAMLNode] = []
            var item = node.pointee.data.sequence.items.start
            while let current = item, current != node.pointee.data.sequence.items.top {
                guard let child = yaml_document_get_node(&document, current.pointee) else { break }
                switch convert(child, in: &document, depth: depth + 1, budget: &budget) {
                case .success(let value): items.append(value)
                case .failure(let failure): return .failure(failure)
                }
                item = current + 1
            }
            return .success(.sequence(items, line: line, column: column))
        case YAML_MAPPING_NODE:
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            var pair = node.pointee.data.mapping.pairs.start
            while let current = pair, current != node.pointee.data.mapping.pairs.top {
                guard let keyNode = yaml_document_get_node(&document, current.pointee.key),
                      let valueNode = yaml_document_get_node(&document, current.pointee.value) else { break }
                let key: YAMLNode
                switch convert(keyNode, in: &document, depth: depth + 1, budget: &budget) {
                case .success(let value): key = value
                case .failure(let failure): return .failure(failure)
                }
                switch convert(valueNode, in: &document, depth: depth + 1, budget: &budget) {
                case .success(let value): pairs.append((key, value))
                case .failure(let failure): return .failure(failure)
                }
                pair = current + 1
            }
            return .success(.mapping(pairs, line: line, column: column))
        default:
            return .success(.scalar("", quoted: false, line: line, column: column))
        }
    }
}
