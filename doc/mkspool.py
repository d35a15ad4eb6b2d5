# Makes a spool of N finished requests (a result in incoming/ and a done task record with a
# usage in state/ each) for measuring `llmspool status` on a large spool (BENCHMARKS.md).
import os, sys
root = sys.argv[1]; n = int(sys.argv[2])
for d in ("outgoing", "incoming", "failed", "state"):
    os.makedirs(f"{root}/{d}", mode=0o700, exist_ok=True)
rec = ('{\n  "attempts" : [{"bytes_received": 300, "bytes_sent": 100, "endpoint": "default", "ended_at": "2026-12-01T10:00:00.100Z", '
       '"http_status": 200, "outcome": "ok", "started_at": "2026-12-01T10:00:00.000Z"}],\n  "endpoint" : "default",\n'
       '  "first_seen" : "2026-12-01T10:00:00.000Z",\n  "id" : "%s",\n  "preferred_endpoint" : 0,\n  "result_inode" : 1,\n'
       '  "status" : "done",\n  "updated_at" : "2026-12-01T10:00:00.100Z",\n  "usage" : {"completion_tokens": 8, "prompt_tokens": 20, "total_tokens": 28}\n}\n')
res = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}\n'
for i in range(n):
    ident = f"r{i:07d}"
    fd = os.open(f"{root}/state/{ident}.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600); os.write(fd, (rec % ident).encode()); os.close(fd)
    fd = os.open(f"{root}/incoming/{ident}.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600); os.write(fd, res); os.close(fd)
print("made", n)
