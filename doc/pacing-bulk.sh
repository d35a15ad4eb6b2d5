#!/bin/bash
# usage: doc/pacing-bulk.sh <llmspool binary> <folder on the filesystem to test>
# 200 streams held open (token_delay_ms 1000, 40 tokens) + one 100 MiB streamed answer
bin=$1
d=$(mktemp -d "$2/pacing-bulk.XXXX")
$bin stub > $d/stub.log 2>&1 &
stub=$!
for i in $(seq 1 50); do grep -q listening $d/stub.log && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' $d/stub.log | head -n1)
mkdir -p $d/spool
cat > $d/config.json <<C
{"spool": "$d/spool", "concurrency": 300, "max_response_bytes": 1073741824, "endpoints": [{"name": "stub", "base_url": "$url"}]}
C
$bin run --config $d/config.json > $d/daemon.log 2>&1 &
daemon=$!
sleep 1
for i in $(seq 1 200); do
  echo '{"model":"m","stream":true,"messages":[{"role":"user","content":"hold"}],"stub":{"tokens":40,"token_delay_ms":1000}}' > $d/spool/outgoing/.h$i.tmp && mv $d/spool/outgoing/.h$i.tmp $d/spool/outgoing/h$i.json
done
sleep 3
start=$(date +%s.%N)
echo '{"model":"m","stream":true,"messages":[{"role":"user","content":"big"}],"stub":{"bulk_bytes":104857600}}' > $d/spool/outgoing/.big.tmp && mv $d/spool/outgoing/.big.tmp $d/spool/outgoing/big.json
while [ ! -e $d/spool/incoming/big.json ]; do sleep 0.05; done
end=$(date +%s.%N)
held=$(ls $d/spool/incoming | grep -c "^h.*\.partial$")
echo "$(basename $bin): big answer $(echo "$end - $start" | bc) s; held streams in flight (.partial): $held; raw bytes $(stat -c %s $d/spool/incoming/big.sse 2>/dev/null || ls $d/spool/incoming | grep big)"
kill $daemon $stub; wait 2>/dev/null
rm -rf $d
