#!/usr/bin/env bash
# Issue 36's cost of repair to the foreground: a 3-host lsm cluster of RF 3 holding
# RECORDS rows of 1 KB serves YCSB A at QUORUM at a fixed rate (LOAD_SHARE of the
# saturation measured first), in windows alternately without and with repairs running on
# every node at once (each node looping `kura admin repair`, every range it replicates,
# paced by --repair-rows-per-second), ROUNDS times. It reports the p99 of each window,
# the ratio of each "with" window to the "without" windows beside it, and how fast a
# whole-cluster repair (`kura admin repair --cluster`) goes, against 1,000,000 rows an
# hour. The replicas hold the same rows, so the repairs cost what a background repair
# usually costs: the scans and one message a range.
#
#   scripts/bench-repair.sh [OUT]        (default OUT: bench-results/repair)
#
# Environment (defaults): RECORDS (200000), ROUNDS (3), WINDOW_S (40: seconds a window
# measures), LOAD_SHARE (0.5), ROWS_PER_S (2000: --repair-rows-per-second), BASE_PORT
# (33000), CLUSTER_REPAIR (1: time a cluster repair first; 0 skips it), KEEP (1 keeps the
# work directory).
set -euo pipefail
[ -f go.mod ] && [ -d scripts ] || cd "$(dirname "$0")/.."
OUT=${1:-bench-results/repair}
RECORDS=${RECORDS:-200000}
ROUNDS=${ROUNDS:-3}
WINDOW_S=${WINDOW_S:-40}
LOAD_SHARE=${LOAD_SHARE:-0.5}
ROWS_PER_S=${ROWS_PER_S:-2000}
BASE=${BASE_PORT:-33000}
WORK=$(mktemp -d /tmp/kura-repair.XXXXXX)
declare -A PIDS=()
LOOPS=()

cleanup() {
  for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null || true; done
  for k in "${!PIDS[@]}"; do kill -TERM "${PIDS[$k]}" 2>/dev/null || true; done
  for k in "${!PIDS[@]}"; do wait "${PIDS[$k]}" 2>/dev/null || true; done
  [ "${KEEP:-0}" = 1 ] && echo "work directory kept: $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

nice -n 19 go build -o "$WORK/kura" ./cmd/kura
KURA=$WORK/kura
port() { echo $((BASE + $2 + $1)); } # port K OFFSET: gossip 0, internode 1000, RESP 2000, admin 3000
admin() { echo "127.0.0.1:$(port "$1" 3000)"; }
targets="resp://$(for k in 1 2 3; do echo "127.0.0.1:$(port "$k" 2000)"; done | paste -sd,)"

for k in 1 2 3; do
  seeds=()
  [ "$k" = 1 ] || seeds=(--seeds "127.0.0.1:$(port 1 0)")
  "$KURA" server --engine lsm --data-dir "$WORK/n$k" --host "h$k" \
    --gossip-listen "127.0.0.1:$(port "$k" 0)" --internode-listen "127.0.0.1:$(port "$k" 1000)" \
    --listen "127.0.0.1:$(port "$k" 2000)" --admin-listen "$(admin "$k")" \
    --repair-period 0 --repair-rows-per-second "$ROWS_PER_S" ${seeds[@]+"${seeds[@]}"} >"$WORK/n$k.log" 2>&1 &
  PIDS[$k]=$!
  for _ in $(seq 300); do grep -qs "kura node ready" "$WORK/n$k.log" && break; sleep 0.2; done
done
for _ in $(seq 300); do
  n=$(curl -sf "http://$(admin 1)/cluster" | jq '[.members[] | select(.status == "normal" and .up)] | length' 2>/dev/null || echo 0)
  [ "$n" = 3 ] && [ "$(curl -sf "http://$(admin 1)/cluster" | jq '.topology.change == null')" = true ] && break
  sleep 0.5
done

mkdir -p "$OUT"
echo "# $(date -u +%FT%TZ) nproc=$(nproc) $(uptime) records=$RECORDS rounds=$ROUNDS window_s=$WINDOW_S load_share=$LOAD_SHARE rows_per_s=$ROWS_PER_S tree=$(git rev-parse --short HEAD 2>/dev/null || echo '?')" | tee "$OUT/conditions.txt"
"$KURA" bench load -w a --target "$targets" --records "$RECORDS" --threads 32 --seed 42 --consistency QUORUM \
  --progress none --plots=false --label load --out "$OUT/load" | sed -n 1p

# A whole-cluster repair, timed: the rate against 1,000,000 rows an hour (CLUSTER_REPAIR=0
# skips it).
if [ "${CLUSTER_REPAIR:-1}" = 1 ]; then
  t0=$(date +%s.%N)
  "$KURA" admin repair --cluster --admin "$(admin 1)" >"$OUT/cluster-repair.txt"
  t1=$(date +%s.%N)
  awk -v r="$RECORDS" -v a="$t0" -v b="$t1" 'BEGIN {s = b - a; printf "cluster repair of %d rows: %.1f s, %.0f rows/s; 1,000,000 rows would take %.1f min\n", r, s, r / s, 1e6 / (r / s) / 60}' | tee -a "$OUT/conditions.txt"
fi

"$KURA" bench run -w a --target "$targets" --records "$RECORDS" --threads 32 --consistency QUORUM -p requestdistribution=uniform \
  --seed 9 --duration 20s --progress none --plots=false --label saturation --out "$OUT/saturation" | sed -n 1p
SAT=$(jq -r .throughput_ops "$OUT/saturation/result.json")
RATE=$(awk -v s="$SAT" -v f="$LOAD_SHARE" 'BEGIN {printf "%.0f", s * f}')
echo "saturation $SAT ops/s; the foreground runs at $RATE ops/s" | tee -a "$OUT/conditions.txt"

# repairs_on starts a loop of full repairs on every node; repairs_off stops the loops and
# the repairs running (DELETE /repair: each stops after its current range).
repairs_on() {
  for k in 1 2 3; do
    (while true; do "$KURA" admin repair --admin "$(admin "$k")" >>"$OUT/repairs-n$k.txt" 2>&1 || sleep 1; done) &
    LOOPS+=($!)
  done
}
repairs_off() {
  for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  LOOPS=()
  for k in 1 2 3; do
    curl -sf -X DELETE "http://$(admin "$k")/repair" >/dev/null 2>&1 || true
    for _ in $(seq 600); do
      [ "$(curl -sf "http://$(admin "$k")/repair" | jq -r '.running' 2>/dev/null || echo false)" = true ] || break
      sleep 0.5
    done
  done
}

for round in $(seq "$ROUNDS"); do
  for mode in off on; do
    [ "$mode" = off ] || repairs_on
    sleep 2
    "$KURA" bench run -w a --target "$targets" --records "$RECORDS" --threads 64 --consistency QUORUM -p requestdistribution=uniform \
      --rate "$RATE" --seed "$round" --duration "${WINDOW_S}s" --progress none --plots=false \
      --label "round$round-$mode" --out "$OUT/round$round-$mode" | sed -n 1p
    [ "$mode" = off ] || repairs_off
  done
done
echo "# done $(date -u +%FT%TZ) $(uptime)" | tee -a "$OUT/conditions.txt"

# The p99 of each window; the ratio of each "with" window to its round's "without", and to
# the median of every "without" window (a stall in one window weighs less there).
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def p99(r, mode, op):
    res = json.load(open(f"{out}/round{r}-{mode}/result.json"))
    return next(o["p99_us"] for o in res["operations"] if o["op"] == op) / 1000
med = {op: statistics.median(p99(r, "off", op) for r in range(1, rounds + 1)) for op in ("READ", "UPDATE")}
print("| round | read p99 without / with repair (ms) | ratio (to the median without) | update p99 without / with (ms) | ratio (to the median without) |")
print("|--:|--:|--:|--:|--:|")
for r in range(1, rounds + 1):
    cells = []
    for op in ("READ", "UPDATE"):
        off, on = p99(r, "off", op), p99(r, "on", op)
        cells += [f"{off:.1f} / {on:.1f}", f"{on / off:.2f} ({on / med[op]:.2f})"]
    print(f"| {r} | " + " | ".join(cells) + " |")
PY
grep -h "repair done" "$OUT"/repairs-n*.txt | tail -n 3 | tee -a "$OUT/summary.md" || true
