"""A hostile Anthropic Message Batches endpoint for BackgroundLaneMessagesTests: the first
create commits and its answer is lost; the list loops (its page leads back to itself) before
it shows the batch, beside a stranger's of the same size; polls answer an unknown status and
absurd counts; the results hold an unknown custom_id, another group's, one of ours twice, an
index past the members, and a last line cut short. Live Messages are answered plainly.
GET /hostile/state tells what it saw. Usage: message_batches.py PORT [LOOPS]."""
import json, signal, sys, threading, re
signal.signal(signal.SIGTERM, signal.SIG_DFL)
PORT = int(sys.argv[1])
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
state = {"creates": 0, "group": None, "n": 0, "lists": 0, "polls": 0, "live": [], "log": []}
lock = threading.Lock()
BATCH = "msgbatch_evil1"
CREATED = "2099-01-01T00:00:00Z"  # far future: always within the horizon
def message(text):
    return {"id": "msg_x", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, code, obj=None, raw=None):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock: state["log"].append(("POST", self.path))
        if self.path == "/v1/messages/batches":
            req = json.loads(body)
            ids = [r["custom_id"] for r in req["requests"]]
            with lock:
                state["creates"] += 1; state["group"] = ids[0].rsplit("-", 1)[0]; state["n"] = len(ids)
                first = state["creates"] == 1
            if first:
                # Committed; the answer is lost.
                self.close_connection = True
                self.connection.shutdown(2)
                return
            return self.send(200, {"id": "msgbatch_second", "type": "message_batch", "processing_status": "in_progress"})
        if self.path == "/v1/messages":
            req = json.loads(body)
            with lock: state["live"].append(req["messages"][0]["content"])
            return self.send(200, message("live " + str(req["messages"][0]["content"])))
        self.send(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})
    def do_GET(self):
        with lock: state["log"].append(("GET", self.path))
        if self.path == "/steal":
            with lock: state["stolen"] = state.get("stolen", 0) + 1
        if self.path == "/hostile/state":
            return self.send(200, state)
        if self.path.startswith("/v1/messages/batches?"):
            with lock:
                state["lists"] += 1; lists = state["lists"]; n = state["n"]
            entry = {"id": BATCH, "type": "message_batch", "processing_status": "ended", "created_at": CREATED,
                     "request_counts": {"processing": 0, "succeeded": n, "errored": 0, "canceled": 0, "expired": 0}}
            if lists <= (int(sys.argv[2]) if len(sys.argv) > 2 else 3):
                # A page that loops: has_more, and its last id leads back to itself.
                return self.send(200, {"data": [dict(entry, id="msgbatch_loop", request_counts={"processing": 10**30})], "has_more": True, "last_id": "msgbatch_loop"})
            stranger = dict(entry, id="msgbatch_stranger")
            return self.send(200, {"data": [stranger, entry], "has_more": False})
        m = re.match(r"^/v1/messages/batches/([^/?]+)(/results)?$", self.path)
        if m:
            bid, results = m.group(1), m.group(2)
            g, n = state["group"], state["n"]
            if results:
                if bid == "msgbatch_stranger":
                    lines = [json.dumps({"custom_id": "gstranger-0", "result": {"type": "expired"}})]
                    return self.send(200, raw=("\n".join(lines) + "\n").encode())
                lines = [
                    json.dumps({"custom_id": "unknown-7", "result": {"type": "succeeded", "message": message("unknown")}}),
                    json.dumps({"custom_id": "gother0000000000-0", "result": {"type": "succeeded", "message": message("another group")}}),
                    json.dumps({"custom_id": f"{g}-0", "result": {"type": "succeeded", "message": message("first of member 0")}}),
                    json.dumps({"custom_id": f"{g}-0", "result": {"type": "succeeded", "message": message("second of member 0")}}),
                    json.dumps({"custom_id": f"{g}-99", "result": {"type": "succeeded", "message": message("past the members")}}),
                    json.dumps({"custom_id": f"{g}-1", "result": {"type": "succeeded", "message": message("cut short")}})[:40],
                ]
                # First line for inspection must be ours: put one of ours first.
                lines.insert(0, lines.pop(2))
                return self.send(200, raw="\n".join(lines).encode())
            with lock:
                state["polls"] += 1; polls = state["polls"]
            if polls <= 2:
                return self.send(200, {"id": bid, "processing_status": "absurd_status", "request_counts": {"processing": -5, "succeeded": 10**40, "errored": "many", "expired": 1.5e308}})
            return self.send(200, {"id": bid, "processing_status": "ended", "cancel_initiated_at": None, "results_url": "http://127.0.0.1:%d/steal" % PORT,
                                   "request_counts": {"processing": 9223372036854775807, "succeeded": 9223372036854775807, "errored": 9223372036854775807, "canceled": -1, "expired": 0}})
        self.send(404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}})
srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
print("listening", flush=True)
srv.serve_forever()
