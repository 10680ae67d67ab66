#!/usr/bin/env bash
# Memory figures for docs/benchmarks.md: the idle RSS of a kura node per engine, and the RSS
# of the memory engine holding ROWS rows of 1 KB (10 hash fields of 100 B, the bench row
# shape), loaded with redis-cli --pipe, three times: with kura's defaults (gc_percent 25 for
# the memory engine), with Go's own GOGC 100 (--gc-percent 100), and with a soft memory
# limit (--memory-limit-bytes LIMIT). Usage: scripts/rss.sh [rows] [limit] (defaults
# 1000000, 1500000000).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
LIMIT=${2:-1500000000}
WORK=$(mktemp -d /tmp/kura-rss.XXXXXX)
trap 'pkill -f "$WORK/kura" 2>/dev/null || true; sleep 0.5; rm -rf "$WORK"' EXIT
go build -o "$WORK/kura" ./cmd/kura

rss_mb() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }
wait_ready() { for _ in $(seq 50); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.2; done; }

echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
port=7500
for eng in lsm btree memory; do
  "$WORK/kura" server --engine "$eng" --listen 127.0.0.1:$port --admin-listen 127.0.0.1:$((port+100)) --data-dir "$WORK/$eng" >/dev/null 2>&1 &
  pid=$!
  wait_ready $port
  redis-cli -p $port ping >/dev/null
  curl -s "127.0.0.1:$((port+100))/metrics" >/dev/null # touch the admin path once, as a scraper would
  sleep 2
  echo "idle RSS engine=$eng: $(rss_mb $pid) MB"
  kill $pid; wait $pid 2>/dev/null || true
  port=$((port+1))
done

for variant in "" "--gc-percent 100" "--memory-limit-bytes $LIMIT"; do
dir="$WORK/mem1m-$RANDOM"
"$WORK/kura" server --engine memory --listen 127.0.0.1:7510 --admin-listen '' --data-dir "$dir" $variant >/dev/null 2>&1 &
pid=$!
wait_ready 7510
python3 - "$ROWS" <<'PY' | redis-cli -p 7510 --pipe | tail -1
import sys
rows = int(sys.argv[1])
out = sys.stdout.buffer
val = b"x" * 100
def cmd(args):
    b = b"*%d\r\n" % len(args)
    for a in args:
        b += b"$%d\r\n%s\r\n" % (len(a), a)
    return b
buf = []
for i in range(rows):
    args = [b"HSET", b"user%010d" % i]
    for f in range(10):
        args += [b"field%d" % f, val]
    buf.append(cmd(args))
    if len(buf) == 10000:
        out.write(b"".join(buf)); buf = []
out.write(b"".join(buf))
PY
echo "DBSIZE: $(redis-cli -p 7510 dbsize)"
sleep 2
echo "RSS engine=memory rows=$ROWS of 10x100 B flags=[${variant:-defaults}]: $(rss_mb $pid) MB (peak $(awk '/VmHWM/ {printf "%.1f", $2/1024}' /proc/$pid/status) MB)"
kill $pid; wait $pid 2>/dev/null || true
done
