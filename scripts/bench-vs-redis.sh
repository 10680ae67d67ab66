#!/usr/bin/env bash
# Side-by-side redis-benchmark of redis-server and kura (each engine), in one run on one
# machine, as docs/benchmarks.md reports it. Needs redis-server and redis-benchmark (Debian:
# apt-get install redis-server redis-tools). Usage:
#
#   scripts/bench-vs-redis.sh [requests] [repeats]     (defaults: 200000, 3)
#   KURA_GOMAXPROCS=1 scripts/bench-vs-redis.sh          kura limited to one core, like
#                                                        redis-server's one event-loop thread
#
# Every target is started fresh on its own port, warmed with the same SETs, then measured
# with SET and GET at 100 B and 1 KB values, 50 clients, no pipelining, over a keyspace of
# 100,000 keys. Targets are interleaved within each repeat so that machine noise hits them
# alike; the table gives the median requests/s of the repeats and the ratio to redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
REPEATS=${2:-3}
CLIENTS=50
KEYSPACE=100000
WORK=$(mktemp -d /tmp/kura-bench.XXXXXX)
# Server logs stay in $WORK/*.log if a run fails; a clean run removes them.
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; sleep 0.5; [ -n "${FAILED:-}" ] || rm -rf "$WORK"' EXIT

go build -o "$WORK/kura" ./cmd/kura

# target NAME PORT COMMAND...: a server to measure.
declare -A CMDS
KENV=""
if [ -n "${KURA_GOMAXPROCS:-}" ]; then KENV="env GOMAXPROCS=$KURA_GOMAXPROCS "; fi
TARGETS=(redis kura-memory kura-lsm-periodic kura-lsm-sync kura-btree)
CMDS[redis]="redis-server --port 7400 --save '' --appendonly no --daemonize no"
CMDS[kura-memory]="${KENV}$WORK/kura server --engine memory --listen 127.0.0.1:7401 --admin-listen '' --data-dir $WORK/memory"
CMDS[kura-lsm-periodic]="${KENV}$WORK/kura server --engine lsm --durability periodic --listen 127.0.0.1:7402 --admin-listen '' --data-dir $WORK/lsmp"
CMDS[kura-lsm-sync]="${KENV}$WORK/kura server --engine lsm --durability sync --listen 127.0.0.1:7403 --admin-listen '' --data-dir $WORK/lsms"
CMDS[kura-btree]="${KENV}$WORK/kura server --engine btree --durability periodic --listen 127.0.0.1:7404 --admin-listen '' --data-dir $WORK/btree"
declare -A PORTS=([redis]=7400 [kura-memory]=7401 [kura-lsm-periodic]=7402 [kura-lsm-sync]=7403 [kura-btree]=7404)

for t in "${TARGETS[@]}"; do
  eval "exec ${CMDS[$t]}" >"$WORK/$t.log" 2>&1 &
  PIDS+=($!)
done
for t in "${TARGETS[@]}"; do
  for _ in $(seq 50); do redis-cli -p "${PORTS[$t]}" ping >/dev/null 2>&1 && break; sleep 0.2; done
  redis-cli -p "${PORTS[$t]}" ping >/dev/null || { FAILED=1; echo "$t did not start; logs in $WORK" >&2; exit 1; }
done

echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) requests=$N repeats=$REPEATS clients=$CLIENTS keyspace=$KEYSPACE kura_gomaxprocs=${KURA_GOMAXPROCS:-default($(nproc))}"
RESULTS="$WORK/results.csv"
: >"$RESULTS"
for size in 100 1024; do
  # Warm every target with the keyspace so GETs hit.
  for t in "${TARGETS[@]}"; do
    redis-benchmark -p "${PORTS[$t]}" -t set -n "$KEYSPACE" -r "$KEYSPACE" -d "$size" -c "$CLIENTS" -q >/dev/null ||
      { FAILED=1; echo "warm-up of $t failed; logs in $WORK" >&2; exit 1; }
  done
  for rep in $(seq "$REPEATS"); do
    for t in "${TARGETS[@]}"; do
      out=$(redis-benchmark -p "${PORTS[$t]}" -t set,get -n "$N" -r "$KEYSPACE" -d "$size" -c "$CLIENTS" --csv 2>"$WORK/$t.bench.err") ||
        { FAILED=1; echo "benchmark of $t failed: $(cat "$WORK/$t.bench.err"); logs in $WORK" >&2; exit 1; }
      echo "$out" | tail -n +2 | tr -d '"' | awk -F, -v t="$t" -v s="$size" -v r="$rep" '{print t","s","$1","r","$2}' >>"$RESULTS"
    done
  done
done

python3 - "$RESULTS" "${TARGETS[@]}" <<'PY'
import csv, sys, statistics
path, targets = sys.argv[1], sys.argv[2:]
runs = {}
for t, size, op, rep, rps in csv.reader(open(path)):
    runs.setdefault((t, size, op), []).append(float(rps))
print("| target | op | value | req/s (median) | runs | vs redis-server |")
print("|---|---|---|---|---|---|")
for size in ("100", "1024"):
    for op in ("SET", "GET"):
        base = statistics.median(runs[("redis", size, op)])
        for t in targets:
            v = runs.get((t, size, op))
            if not v:
                continue
            m = statistics.median(v)
            print(f"| {t} | {op} | {size} B | {m:,.0f} | {' '.join(f'{x:,.0f}' for x in v)} | {m/base:.2f}x |")
PY
