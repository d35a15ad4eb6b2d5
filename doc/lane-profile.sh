#!/bin/bash
# The B4 scenario by hand, for profiling: a stub whose batches end after 3 s, a daemon with
# one OpenAI batch endpoint, and one batch file of LINES deferrable chat lines renamed into
# outgoing. Samples the daemon's VmHWM, VmRSS and RssAnon every second (ROOT/samples.txt,
# seconds since the drop first) beside its log (ROOT/daemon.log, log_level info).
# Usage: doc/lane-profile.sh LLMSPOOL_BINARY LINES NAME [WRAPPER...]
#   doc/lane-profile.sh .build/release/llmspool 10000 plain
#   doc/lane-profile.sh .build/release/llmspool 10000 heap heaptrack -o /tmp/lane-heap
set -u
BIN=$1; N=$2; TAG=$3; shift 3
ROOT=${TMPDIR:-/tmp}/lane-profile-$TAG; rm -rf $ROOT; mkdir -p $ROOT/spool $ROOT/staging
$BIN stub --port 0 --batch-seconds 3 > $ROOT/stub.out 2>/dev/null & STUB=$!
for i in $(seq 100); do grep -q 'http://127' $ROOT/stub.out && break; sleep 0.1; done
URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/v1' $ROOT/stub.out | head -1)
cat > $ROOT/config.json <<J
{"spool":"$ROOT/spool","base_url":"$URL","concurrency":64,"log_level":"info","min_free_bytes":0,"request_timeout_seconds":3600,"idle_timeout_seconds":600,
"endpoints":[{"name":"batchy","base_url":"$URL","batch":true}],"default_completion_window":"24h","max_batch_lines":$N,
"batch_max_requests":$N,"batch_linger_seconds":600,"batch_poll_seconds":1,"batch_poll_max_seconds":2}
J
python3 - $N $ROOT/staging/b4.jsonl <<'P'
import sys
n=int(sys.argv[1]); pad="x"*200
with open(sys.argv[2],"w") as f:
    for i in range(n):
        f.write('{"custom_id":"b4-%d","method":"POST","url":"/v1/chat/completions","body":{"model":"bench","messages":[{"role":"user","content":"b4 %d %s"}]}}\n'%(i,i,pad))
P
env -u OPENAI_BASE_URL "$@" $BIN run --config $ROOT/config.json 2> $ROOT/daemon.log & WRAP=$!
sleep 1
DPID=$(pgrep -P $WRAP -f "run --config $ROOT" | head -1); [ -z "$DPID" ] && DPID=$WRAP
for i in $(seq 600); do [ -e $ROOT/spool/state/.daemon.json ] && break; sleep 0.2; done
sleep 2
echo "daemon pid $DPID (wrapper $WRAP)" > $ROOT/samples.txt
START=$(date +%s.%N)
mv $ROOT/staging/b4.jsonl $ROOT/spool/outgoing/b4.jsonl
while [ ! -e $ROOT/spool/incoming/b4.batch.json ]; do
  T=$(echo "$(date +%s.%N) - $START" | bc)
  echo "$T $(grep -E 'VmHWM|VmRSS|RssAnon' /proc/$DPID/status | tr -s ' \t' ' ' | tr '\n' ' ')" >> $ROOT/samples.txt
  sleep 1
  kill -0 $DPID 2>/dev/null || { echo DIED >> $ROOT/samples.txt; break; }
done
END=$(date +%s.%N)
echo "seconds $(echo "$END - $START" | bc)" >> $ROOT/samples.txt
grep -E 'VmHWM|VmRSS|RssAnon' /proc/$DPID/status >> $ROOT/samples.txt
awk '{print "cpu_ticks", $14+$15}' /proc/$DPID/stat >> $ROOT/samples.txt
kill -TERM $DPID; wait $WRAP 2>/dev/null
kill -TERM $STUB; wait $STUB 2>/dev/null
tail -5 $ROOT/samples.txt
