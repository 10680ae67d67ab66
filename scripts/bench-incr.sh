#!/usr/bin/env bash
# What a counter costs: redis-benchmark's SET and INCR (and HSET, HINCRBY) alternated
# against a 3-node local cluster (one lsm node per host, RF 3, QUORUM) and against
# redis-server, as docs/benchmarks.md reports them. A kura INCR runs at the key's leader:
# one hop more than a SET when the coordinator is not the leader (two times in three
# here), a read at QUORUM, then the write. Usage:
#
#   scripts/bench-incr.sh [OUT]        (default OUT: bench-results/incr)
#
# Environment: REQUESTS (20000 per run), CLIENTS (16), KEYSPACE (10000), REPEAT (3),
# BASE_PORT (27380).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/incr}
REQUESTS=${REQUESTS:-20000}
CLIENTS=${CLIENTS:-16}
KEYSPACE=${KEYSPACE:-10000}
REPEAT=${REPEAT:-3}
BASE=${BASE_PORT:-27380}
WORK=$(mktemp -d /tmp/kura-incr.XXXXXX)
DEV_PID="" REDIS_PID=""
cleanup() {
  if [ -n "$DEV_PID" ]; then kill -INT "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  if [ -n "$REDIS_PID" ]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not found: apt-get install redis-tools" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server not found: apt-get install redis-server" >&2; exit 1; }
mkdir -p "$OUT"
go build -o "$WORK/kura" ./cmd/kura
"$WORK/kura" dev --hosts 3 --engines lsm --data-dir "$WORK/dev" --base-port "$BASE" >"$WORK/dev.log" 2>&1 &
DEV_PID=$!
REDIS_PORT=$((BASE + 900))
redis-server --port "$REDIS_PORT" --save "" --appendonly no >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 1 300); do grep -q "Ctrl-C stops" "$WORK/dev.log" && break; sleep 0.2; done
grep -q "Ctrl-C stops" "$WORK/dev.log" || { cat "$WORK/dev.log" >&2; exit 1; }

# rps PORT TEST: one redis-benchmark run of TEST, its requests per second.
rps() {
  redis-benchmark -p "$1" -n "$REQUESTS" -c "$CLIENTS" -r "$KEYSPACE" -t "$2" --csv -q 2>/dev/null |
    awk -F'","' 'NR==2 {gsub(/"/, "", $2); print $2}'
}
# cmd_rps PORT CMD FIELD ARG: CMD h:<random> FIELD ARG as a redis-benchmark command.
cmd_rps() {
  redis-benchmark -p "$1" -n "$REQUESTS" -c "$CLIENTS" -r "$KEYSPACE" --csv -q \
    "$2" "h:__rand_int__" "$3" "$4" 2>/dev/null | awk -F'","' 'NR==2 {gsub(/"/, "", $2); print $2}'
}
RESULTS="$OUT/runs.csv"
echo "round,target,test,rps" >"$RESULTS"
for round in $(seq 1 "$REPEAT"); do
  for target in kura redis; do
    port=$BASE
    [ "$target" = redis ] && port=$REDIS_PORT
    for test in set incr; do
      echo "$round,$target,$test,$(rps "$port" "$test")" >>"$RESULTS"
    done
    # redis-benchmark's own hset test grows one hash; these are one field in each of
    # KEYSPACE hashes, as INCR's counters are KEYSPACE keys.
    echo "$round,$target,hset,$(cmd_rps "$port" hset f v)" >>"$RESULTS"
    echo "$round,$target,hincrby,$(cmd_rps "$port" hincrby g 1)" >>"$RESULTS"
  done
done
python3 - "$RESULTS" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for t in ("kura", "redis"):
    for test in ("set", "incr", "hset", "hincrby"):
        med[t, test] = statistics.median(float(r["rps"]) for r in rows if r["target"] == t and r["test"] == test)
print("| target | SET | INCR | INCR / SET | HSET | HINCRBY | HINCRBY / HSET |")
print("|---|---|---|---|---|---|---|")
for t in ("kura", "redis"):
    print(f"| {t} | {med[t,'set']:.0f} | {med[t,'incr']:.0f} | {med[t,'incr']/med[t,'set']:.2f} | "
          f"{med[t,'hset']:.0f} | {med[t,'hincrby']:.0f} | {med[t,'hincrby']/med[t,'hset']:.2f} |")
EOF
