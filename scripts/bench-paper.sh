#!/usr/bin/env bash
# The papers' four workloads (write-only, write-heavy, read-heavy, read-only; 000 table 1,
# 003 table 1) with `kura bench`, against a single kura node of each engine and against
# redis-server, in one run on one machine, as docs/benchmarks.md reports them. Needs
# redis-server (Debian: apt-get install redis-server). Usage:
#
#   scripts/bench-paper.sh [OUT]          (default OUT: bench-results/paper)
#
# Environment: RECORDS (100000 records of 10 x 100 B = 1 KB), THREADS (16), RUN (20s
# measured per workload and target), WARMUP (5s), ZIPF (0.99), DURABILITY (kura's
# --durability, default sync; redis-server runs without persistence), WITH_CASSANDRA=1 to
# add a single-node Apache Cassandra (scripts/cassandra.sh; about 1.5 GB of memory,
# consistency ONE, warmed for CASSANDRA_WARMUP, default 30s, because its JIT needs it).
# RATE=N adds the papers' other method: the same workloads in open loop at N ops/s (000
# used 5,000/s, 003 3,000/s), latency measured from each operation's scheduled start,
# reported in OUT/report-rate; CLOSED=0 skips the closed-loop pass.
#
# Every server is started fresh on its own port and loaded with the same records. Then,
# workload by workload, the targets take turns (so that machine noise hits them alike),
# and finally an in-process no-op target runs the same workload to show what the client
# alone can drive (saved under OUT/client-ceiling, left out of the report's charts).
# `kura bench report` renders OUT/report/report.md with charts. The RSS of every server is
# printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/paper}
RECORDS=${RECORDS:-100000}
THREADS=${THREADS:-16}
RUN=${RUN:-20s}
WARMUP=${WARMUP:-5s}
ZIPF=${ZIPF:-0.99}
DURABILITY=${DURABILITY:-sync}
WORK=$(mktemp -d /tmp/kura-paper.XXXXXX)
PIDS=()
CASSANDRA_WARMUP=${CASSANDRA_WARMUP:-30s}
cleanup() {
  kill "${PIDS[@]}" 2>/dev/null || true
  if [ -n "${WITH_CASSANDRA:-}" ]; then scripts/cassandra.sh stop "$WORK/cassandra" >/dev/null 2>&1 || true; fi
  sleep 0.5
  [ -n "${FAILED:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

command -v redis-server >/dev/null || { echo "redis-server is needed: apt-get install redis-server" >&2; exit 1; }
go build -o "$WORK/kura" ./cmd/kura
KURA=$WORK/kura
rm -rf "$OUT"
mkdir -p "$OUT"

TARGETS=(kura-lsm kura-btree kura-memory redis)
declare -A PORTS=([kura-lsm]=7411 [kura-btree]=7412 [kura-memory]=7413 [redis]=7414)
for e in lsm btree memory; do
  "$KURA" server --engine "$e" --durability "$DURABILITY" --listen "127.0.0.1:${PORTS[kura-$e]}" \
    --admin-listen '' --data-dir "$WORK/$e" >"$WORK/kura-$e.log" 2>&1 &
  PIDS+=($!)
done
redis-server --port "${PORTS[redis]}" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
declare -A ADDR WARM
for t in "${TARGETS[@]}"; do ADDR[$t]="127.0.0.1:${PORTS[$t]}"; WARM[$t]=$WARMUP; done
if [ -n "${WITH_CASSANDRA:-}" ]; then
  CASSANDRA_PORT=7415 CASSANDRA_STORAGE_PORT=7416 scripts/cassandra.sh start "$WORK/cassandra" >"$WORK/cassandra.start.log" 2>&1 ||
    { FAILED=1; echo "cassandra did not start; logs in $WORK" >&2; exit 1; }
  ADDR[cassandra]="cql://127.0.0.1:7415/ycsb?createschema=true&consistency=ONE"
  WARM[cassandra]=$CASSANDRA_WARMUP
fi
for t in "${TARGETS[@]}"; do
  for _ in $(seq 50); do redis-cli -p "${PORTS[$t]}" ping >/dev/null 2>&1 && break; sleep 0.2; done
  redis-cli -p "${PORTS[$t]}" ping >/dev/null || { FAILED=1; echo "$t did not start; logs in $WORK" >&2; exit 1; }
done

echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS threads=$THREADS run=$RUN warmup=$WARMUP zipf=$ZIPF durability=$DURABILITY" | tee "$OUT/conditions.txt"
COMMON=(--records "$RECORDS" --threads "$THREADS" -p "zipfianconstant=$ZIPF" --progress none --seed 42)
if [ -n "${WITH_CASSANDRA:-}" ]; then TARGETS+=(cassandra); fi
for t in "${TARGETS[@]}"; do
  "$KURA" bench load --target "${ADDR[$t]}" --label "$t" -w read-heavy "${COMMON[@]}" \
    --out "$OUT/load/$t" --plots=false | sed -n 1p
done
for w in write-only write-heavy read-heavy read-only; do
  [ "${CLOSED:-1}" = 0 ] && break
  for t in "${TARGETS[@]}"; do
    "$KURA" bench run --target "${ADDR[$t]}" --label "$t" -w "$w" "${COMMON[@]}" \
      --duration "$RUN" --warmup "${WARM[$t]}" --out "$OUT/$w/$t" | sed -n 1p
  done
  "$KURA" bench run --target noop --label "noop-client" -w "$w" "${COMMON[@]}" --duration 5s \
    --out "$OUT/client-ceiling/$w" --plots=false | sed -n 1p
done
if [ -n "${RATE:-}" ]; then
  for w in write-only write-heavy read-heavy read-only; do
    for t in "${TARGETS[@]}"; do
      "$KURA" bench run --target "${ADDR[$t]}" --label "$t" -w "$w" "${COMMON[@]}" --rate "$RATE" \
        --duration "$RUN" --warmup "${WARM[$t]}" --out "$OUT/rate-$RATE/$w/$t" | sed -n 1p
    done
  done
fi
echo "# RSS after the runs (MiB):"
for i in "${!PIDS[@]}"; do
  echo "${TARGETS[$i]} $(( $(ps -o rss= -p "${PIDS[$i]}") / 1024 ))"
done | tee -a "$OUT/conditions.txt"
if [ -n "${WITH_CASSANDRA:-}" ]; then
  echo "cassandra $(( $(ps -o rss= -p "$(cat "$WORK/cassandra/cassandra.pid")") / 1024 ))" | tee -a "$OUT/conditions.txt"
fi
if [ "${CLOSED:-1}" != 0 ]; then
  "$KURA" bench report "$OUT/load" "$OUT/write-only" "$OUT/write-heavy" "$OUT/read-heavy" "$OUT/read-only" \
    --out "$OUT/report" --baseline redis --title "Paper workloads, single node"
fi
if [ -n "${RATE:-}" ]; then
  "$KURA" bench report "$OUT/rate-$RATE" --out "$OUT/report-rate" --baseline redis \
    --title "Paper workloads, single node, open loop at $RATE ops/s"
fi
