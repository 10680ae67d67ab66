#!/usr/bin/env bash
# A 3-node local cluster (one lsm node per host, RF 3, QUORUM) under `kura bench`: the
# papers' four workloads next to the ceiling the same client reaches with PING through the
# same connections, as docs/benchmarks.md reports them. Usage:
#
#   scripts/bench-cluster.sh [OUT]        (default OUT: bench-results/cluster)
#
# Environment: RECORDS (100000), THREADS (40: the papers' client threads for throughput, seed
# 000 Fig. 7), RUN (20s), WARMUP (30s: long enough for the nodes' row caches to have seen
# the keys, so that the runs measure the steady state), BASE_PORT (26380),
# SERVER_FLAGS (extra flags for every node, e.g. "--lsm-row-cache-bytes=268435456"),
# KURA_BIN (a kura binary to use instead of building this tree's), KURA_SERVER_BIN (the
# binary the nodes run, default KURA_BIN: scripts/bench-builds.sh compares two builds
# with one client).
# Client connections are spread over the three nodes, so every node coordinates a third of
# the requests. RSS of every node is sampled in the middle of each run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/cluster}
RECORDS=${RECORDS:-100000}
THREADS=${THREADS:-40}
RUN=${RUN:-20s}
WARMUP=${WARMUP:-30s}
BASE=${BASE_PORT:-26380}
DEV_FLAGS=()
for flag in ${SERVER_FLAGS:-}; do DEV_FLAGS+=("--server-flag=$flag"); done
WORK=$(mktemp -d /tmp/kura-cluster.XXXXXX)
DEV_PID=""
cleanup() {
  # A client of ours still running (the script was interrupted) would go on running
  # against the next cluster started on the same ports.
  pkill -f "^$KURA bench" 2>/dev/null || true
  if [ -n "$DEV_PID" ]; then kill -INT "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  [ -n "${FAILED:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "${KURA_BIN:-}" ]; then
  KURA=$KURA_BIN
else
  go build -o "$WORK/kura" ./cmd/kura
  KURA=$WORK/kura
fi
SERVER=${KURA_SERVER_BIN:-$KURA}
rm -rf "$OUT"
mkdir -p "$OUT"
"$SERVER" dev --hosts 3 --engines lsm --data-dir "$WORK/data" --base-port "$BASE" ${DEV_FLAGS[@]+"${DEV_FLAGS[@]}"} >"$WORK/dev.out" 2>&1 &
DEV_PID=$!
for _ in $(seq 120); do grep -q "Ctrl-C stops" "$WORK/dev.out" && break; sleep 0.5; done
grep -q "Ctrl-C stops" "$WORK/dev.out" || { FAILED=1; cat "$WORK/dev.out" >&2; exit 1; }
PIDS=$(grep -o 'pid [0-9]*' "$WORK/dev.out" | awk '{print $2}')
TARGET="resp://127.0.0.1:$BASE,127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"

echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS threads=$THREADS run=$RUN warmup=$WARMUP cluster=3x lsm RF3 QUORUM server_flags=${SERVER_FLAGS:-none} server=$SERVER" | tee "$OUT/conditions.txt"
COMMON=(--target "$TARGET" --records "$RECORDS" --threads "$THREADS" --progress none --seed 42 --label kura-3-node-quorum)
"$KURA" bench load -w read-heavy "${COMMON[@]}" --out "$OUT/load" --plots=false | sed -n 1p
for w in ping write-only write-heavy read-heavy read-only; do
  ( sleep $(( ${WARMUP%s} + ${RUN%s} / 2 )); for p in $PIDS; do echo "$w pid $p rss_mib $(( $(ps -o rss= -p "$p") / 1024 ))"; done >>"$OUT/rss.txt" ) &
  SAMPLER=$!
  "$KURA" bench run -w "$w" "${COMMON[@]}" --duration "$RUN" --warmup "$WARMUP" --out "$OUT/$w" | sed -n 1p
  wait "$SAMPLER" # not a bare wait: kura dev is a child too
done
cat "$OUT/rss.txt"
"$KURA" bench report "$OUT/write-only" "$OUT/write-heavy" "$OUT/read-heavy" "$OUT/read-only" "$OUT/ping" \
  --out "$OUT/report" --title "3-node cluster, RF 3, QUORUM"
