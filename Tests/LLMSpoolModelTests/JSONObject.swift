import Foundation

/// Foundation's reading of a JSON object: the model's own readers are checked against it.
enum JSONObject {
    static func parse(_ bytes: [UInt8]) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }
}
