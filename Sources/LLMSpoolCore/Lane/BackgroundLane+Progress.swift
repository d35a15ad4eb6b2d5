import Foundation

/// A remote batch's progress as the live status file carries it to `status` and `show`.
extension BackgroundLane.Progress {
    /// One object of the live status's `remote_batches`.
    func json() -> String {
        var text = "{\"group\":"
        JSONText.appendQuoted(group, to: &text)
        text += ",\"endpoint\":"
        JSONText.appendQuoted(endpoint, to: &text)
        text += ",\"state\":"
        JSONText.appendQuoted(state, to: &text)
        if let batchID {
            text += ",\"batch_id\":"
            JSONText.appendQuoted(batchID, to: &text)
        }
        if let remoteStatus {
            text += ",\"remote_status\":"
            JSONText.appendQuoted(remoteStatus, to: &text)
        }
        text += ",\"requests\":\(members)"
        if let total, let completed, let failed {
            text += ",\"request_counts\":{\"total\":\(total),\"completed\":\(completed),\"failed\":\(failed)}"
        }
        return text + "}"
    }

    /// Reads one back; nil when it lacks what every entry has. Counts that are not whole
    /// numbers are left out rather than trusted.
    init?(json object: [String: Any]) {
        guard let group = object["group"] as? String, let endpoint = object["endpoint"] as? String, let state = object["state"] as? String else { return nil }
        self.init(group: group, endpoint: endpoint, state: state, batchID: object["batch_id"] as? String,
                  remoteStatus: object["remote_status"] as? String, members: object["requests"] as? Int ?? 0)
        if let counts = object["request_counts"] as? [String: Any], let total = counts["total"] as? Int,
           let completed = counts["completed"] as? Int, let failed = counts["failed"] as? Int {
            (self.total, self.completed, self.failed) = (total, completed, failed)
        }
    }
}
