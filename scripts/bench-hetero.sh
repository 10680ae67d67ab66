#!/usr/bin/env bash
# The heterogeneous cluster against the homogeneous baseline (seed 000's experiment, issue
# 5): `kura dev --hosts 3 --engines lsm,btree,memory` (engine-diverse placement,
# engine-aware routing) next to `kura dev --hosts 3 --engines lsm` (host-aware placement,
# uniform routing: the paper's "original Cassandra"), RF 3, QUORUM, the papers' four
# workloads, zipfian 0.99. Usage:
#
#   scripts/bench-hetero.sh [OUT]        (default OUT: bench-results/hetero)
#
# Environment: RECORDS (100000), THREADS (40, the paper's Fig. 7), RUN (20s), WARMUP (30s),
# RATE (1000: the fixed request rate of the latency runs, the paper's Figs. 5 and 6; it
# must be one both clusters sustain), PHASES ("throughput latency"), BASE_PORT (27380),
# SERVER_FLAGS (extra flags for every node), NODE_WRAPPER (a command every node runs
# under, e.g. "scripts/emulate-disks.sh run --disk hdd --memory 256M --" for the emulated
# HDD; see docs/design/emulated-disks.md), MEMORY_NODE_WRAPPER (the same for in-memory
# nodes only, which need room for their whole share) and DATA_ROOT (where the nodes' data
# directories go, e.g. /mnt/kura-hdd; default a temporary directory). Client connections
# are spread over every node of the cluster. RSS of every node is sampled in the middle
# of each run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/hetero}
RECORDS=${RECORDS:-100000}
THREADS=${THREADS:-40}
RUN=${RUN:-20s}
WARMUP=${WARMUP:-30s}
RATE=${RATE:-1000}
PHASES=${PHASES:-throughput latency}
BASE=${BASE_PORT:-27380}
DEV_FLAGS=()
for flag in ${SERVER_FLAGS:-}; do DEV_FLAGS+=("--server-flag=$flag"); done
[ -n "${NODE_WRAPPER:-}" ] && DEV_FLAGS+=("--node-wrapper=$NODE_WRAPPER")
[ -n "${MEMORY_NODE_WRAPPER:-}" ] && DEV_FLAGS+=("--node-wrapper=memory=$MEMORY_NODE_WRAPPER")
WORK=$(mktemp -d /tmp/kura-hetero.XXXXXX)
DATA=${DATA_ROOT:-$WORK}/kura-hetero-data
DEV_PID=""
stop_cluster() {
  if [ -n "$DEV_PID" ]; then kill -INT "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  DEV_PID=""
}
cleanup() {
  stop_cluster
  [ -n "${FAILED:-}" ] || rm -rf "$WORK" "$DATA"
}
trap cleanup EXIT

# tree_rss PID: resident KiB of PID and its descendants (a node under --node-wrapper is the
# wrapper's child).
tree_rss() {
  local total c
  total=$(ps -o rss= -p "$1" 2>/dev/null || echo 0)
  for c in $(pgrep -P "$1"); do total=$((total + $(tree_rss "$c"))); done
  echo "$total"
}

go build -o "$WORK/kura" ./cmd/kura
KURA=$WORK/kura
rm -rf "$OUT" "$DATA"
mkdir -p "$OUT"
echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS threads=$THREADS run=$RUN warmup=$WARMUP rate=$RATE phases=\"$PHASES\" server_flags=${SERVER_FLAGS:-none}" | tee "$OUT/conditions.txt"

for cluster in homogeneous heterogeneous; do
  engines=lsm
  [ "$cluster" = heterogeneous ] && engines=lsm,btree,memory
  "$KURA" dev --hosts 3 --engines "$engines" --data-dir "$DATA/$cluster" --base-port "$BASE" ${DEV_FLAGS[@]+"${DEV_FLAGS[@]}"} >"$WORK/$cluster.out" 2>&1 &
  DEV_PID=$!
  for _ in $(seq 120); do grep -q "Ctrl-C stops" "$WORK/$cluster.out" && break; sleep 0.5; done
  grep -q "Ctrl-C stops" "$WORK/$cluster.out" || { FAILED=1; cat "$WORK/$cluster.out" >&2; exit 1; }
  PIDS=$(grep -o 'pid [0-9]*' "$WORK/$cluster.out" | awk '{print $2}')
  nodes=$(echo "$PIDS" | wc -w)
  TARGET="resp://$(for i in $(seq 0 $((nodes - 1))); do printf '127.0.0.1:%d,' $((BASE + i)); done | sed 's/,$//')"
  COMMON=(--target "$TARGET" --records "$RECORDS" --threads "$THREADS" --progress none --seed 42)
  "$KURA" bench load -w read-heavy "${COMMON[@]}" --label "$cluster" --out "$OUT/$cluster-load" --plots=false | sed -n 1p
  for phase in $PHASES; do
    for w in write-only write-heavy read-heavy read-only; do
      extra=()
      [ "$phase" = latency ] && extra=(--rate "$RATE")
      ( sleep $(( ${WARMUP%s} + ${RUN%s} / 2 )); for p in $PIDS; do echo "$cluster $phase $w pid $p rss_mib $(( $(tree_rss "$p") / 1024 ))"; done >>"$OUT/rss.txt" ) &
      SAMPLER=$!
      "$KURA" bench run -w "$w" "${COMMON[@]}" ${extra[@]+"${extra[@]}"} --label "$cluster-$phase" --duration "$RUN" --warmup "$WARMUP" \
        --out "$OUT/$cluster-$phase-$w" | sed -n 1p
      wait "$SAMPLER" # not a bare wait: kura dev is a child too
    done
  done
  stop_cluster
done
for phase in $PHASES; do
  dirs=()
  for w in write-only write-heavy read-heavy read-only; do dirs+=("$OUT/homogeneous-$phase-$w" "$OUT/heterogeneous-$phase-$w"); done
  "$KURA" bench report "${dirs[@]}" --baseline "homogeneous-$phase" --out "$OUT/report-$phase" \
    --title "Heterogeneous vs homogeneous cluster ($phase), RF 3, QUORUM"
done
