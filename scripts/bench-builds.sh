#!/usr/bin/env bash
# Two builds of kura side by side under scripts/bench-cluster.sh: the nodes of build A
# and of build B, alternated (A B A B ...), each run against a fresh 3-node cluster, all
# driven by the client of build B, so that only the servers differ. Prints, per workload,
# each run's throughput and the median of B's over the median of A's. Usage:
#
#   scripts/bench-builds.sh REV_A REV_B [OUT]     (default OUT: bench-results/builds)
#
# REV_A and REV_B are git revisions (commit hashes, HEAD, ...). Environment: REPEAT (3,
# the pairs of runs), and bench-cluster.sh's own (RECORDS, THREADS, RUN, WARMUP, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench-builds.sh REV_A REV_B [OUT]}
B=${2:?usage: bench-builds.sh REV_A REV_B [OUT]}
OUT=${3:-bench-results/builds}
REPEAT=${REPEAT:-3}
WORK=$(mktemp -d /tmp/kura-builds.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

build() { # build REV NAME: the kura binary of REV at $WORK/NAME
  git worktree add --detach --quiet "$WORK/src-$2" "$1"
  (cd "$WORK/src-$2" && go build -o "$WORK/$2" ./cmd/kura)
  git worktree remove --force "$WORK/src-$2"
}
build "$A" a
build "$B" b
rm -rf "$OUT"
mkdir -p "$OUT"
echo "# $(date -u +%FT%TZ) A=$(git rev-parse --short "$A") B=$(git rev-parse --short "$B") repeat=$REPEAT nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/conditions.txt"
for i in $(seq "$REPEAT"); do
  for side in a b; do
    echo "== run $i, build $side ($(cut -d' ' -f1-3 /proc/loadavg))"
    KURA_BIN=$WORK/b KURA_SERVER_BIN=$WORK/$side scripts/bench-cluster.sh "$OUT/$side-$i" >"$OUT/$side-$i.log" 2>&1 ||
      { cat "$OUT/$side-$i.log" >&2; exit 1; }
  done
done

python3 - "$OUT" "$REPEAT" <<'PY' | tee "$OUT/ratios.txt"
import json, statistics, sys
out, repeat = sys.argv[1], int(sys.argv[2])
print(f"{'workload':12} {'A ops/s (runs)':>34} {'B ops/s (runs)':>34} {'B/A of medians':>15}")
for w in ["ping", "write-only", "write-heavy", "read-heavy", "read-only"]:
    runs = {s: [json.load(open(f"{out}/{s}-{i}/{w}/result.json"))["throughput_ops"] for i in range(1, repeat + 1)] for s in "ab"}
    ratio = statistics.median(runs["b"]) / statistics.median(runs["a"])
    fmt = lambda xs: " ".join(f"{x:,.0f}" for x in xs)
    print(f"{w:12} {fmt(runs['a']):>34} {fmt(runs['b']):>34} {ratio:>15.3f}")
PY
