#!/usr/bin/env bash
# go-ycsb v1.0.1, stock, through its Redis binding, beside `kura bench`: the same YCSB
# workload files (go-ycsb's own workloada..workloadf), the same record and operation counts
# and thread count, against one 3-node `kura dev` cluster (one lsm node per host, RF 3,
# QUORUM), as docs/benchmarks.md reports them (issue 34, point 7). Usage:
#
#   scripts/bench-ycsb.sh [OUT]        (default OUT: bench-results/ycsb)
#
# Environment: RECORDS (50000), OPERATIONS (100000 a run), THREADS (16), REPEAT (3: each
# workload runs REPEAT times on each client, the clients alternating and the first of a
# pair changing every time), BASE_PORT (27380), KURA_BIN (a kura binary instead of
# building this tree's), GO_YCSB (a go-ycsb binary instead of building v1.0.1), PIN (1:
# the cluster on CPU 0 and the clients on CPU 1, so that what a client's own work costs
# is not taken from the nodes; default 0, everything shares both cores).
#
# Both clients send every request to the first node (go-ycsb's Redis binding in its
# "single" mode takes one address), which coordinates them all. Both load their own
# records (go-ycsb names keys usertable/userN, kura bench userN) into the same cluster,
# then run A, B, C, F and D in that order (D inserts, so it runs last); E runs on kura
# bench alone (go-ycsb's Redis binding has no scans). Records are hashes of 10 fields of
# 100 bytes for both: go-ycsb inserts with HSET and reads with HMGET of all fields, kura
# bench inserts with HSET and reads with HGETALL.
#
# Why go-ycsb is built from its module here and not with `go install ...@v1.0.1`: its
# go.mod has a replace directive (github.com/apache/thrift => a 2017 commit), and `go
# install` refuses any module whose go.mod has one. Built as its own main module, with its
# own go.mod and go.sum, it is the same program its authors build; nothing is patched.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/ycsb}
RECORDS=${RECORDS:-50000}
OPERATIONS=${OPERATIONS:-100000}
THREADS=${THREADS:-16}
REPEAT=${REPEAT:-3}
BASE=${BASE_PORT:-27380}
SERVER_CPU=() CLIENT_CPU=()
if [ "${PIN:-0}" = 1 ]; then SERVER_CPU=(taskset -c 0) CLIENT_CPU=(taskset -c 1); fi
YCSB_VERSION=v1.0.1
WORK=$(mktemp -d /tmp/kura-ycsb.XXXXXX)
DEV_PID=""
cleanup() {
  if [ -n "$DEV_PID" ]; then kill -INT "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# build_go_ycsb builds go-ycsb $YCSB_VERSION from the Go module proxy into $1.
build_go_ycsb() {
  local src
  src=$(cd "$WORK" && go mod download -json "github.com/pingcap/go-ycsb@$YCSB_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  cp -r "$src" "$WORK/go-ycsb-src"
  chmod -R u+w "$WORK/go-ycsb-src"
  (cd "$WORK/go-ycsb-src" && GOFLAGS=-mod=readonly go build -o "$1" ./cmd/go-ycsb)
}

if [ -z "${GO_YCSB:-}" ]; then
  GO_YCSB=${XDG_CACHE_HOME:-$HOME/.cache}/kura/go-ycsb-$YCSB_VERSION
  [ -x "$GO_YCSB" ] || { mkdir -p "$(dirname "$GO_YCSB")"; build_go_ycsb "$GO_YCSB"; }
fi
WORKLOADS=$(go mod download -json "github.com/pingcap/go-ycsb@$YCSB_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/workloads
if [ -n "${KURA_BIN:-}" ]; then
  KURA=$KURA_BIN
else
  go build -o "$WORK/kura" ./cmd/kura
  KURA=$WORK/kura
fi

rm -rf "$OUT"
mkdir -p "$OUT"
${SERVER_CPU[@]+"${SERVER_CPU[@]}"} "$KURA" dev --hosts 3 --engines lsm --data-dir "$WORK/data" --base-port "$BASE" >"$WORK/dev.out" 2>&1 &
DEV_PID=$!
for _ in $(seq 240); do grep -q "Ctrl-C stops" "$WORK/dev.out" && break; sleep 0.5; done
grep -q "Ctrl-C stops" "$WORK/dev.out" || { cat "$WORK/dev.out" >&2; exit 1; }
ADDR=127.0.0.1:$BASE

echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS operations=$OPERATIONS threads=$THREADS repeat=$REPEAT pin=${PIN:-0} cluster=3x lsm RF3 QUORUM, all requests to $ADDR; kura ${KURA_BIN:-built from $(git rev-parse --short HEAD 2>/dev/null || echo '?')}; go-ycsb $YCSB_VERSION" | tee "$OUT/conditions.txt"

# Each run's client CPU time goes to NAME.cpu (user s, system s, elapsed s): both clients
# share the two cores with the three nodes, so a client's own cost shows in throughput.
ycsb() { # PHASE WORKLOAD NAME
  /usr/bin/time -f "%U %S %e" -o "$OUT/$3.cpu" ${CLIENT_CPU[@]+"${CLIENT_CPU[@]}"} "$GO_YCSB" "$1" redis -P "$WORKLOADS/workload$2" \
    -p redis.addr="$ADDR" -p redis.pool_size="$THREADS" -p threadcount="$THREADS" \
    -p recordcount="$RECORDS" -p operationcount="$OPERATIONS" >"$OUT/$3.txt" 2>&1
}
kbench() { # PHASE WORKLOAD NAME
  /usr/bin/time -f "%U %S %e" -o "$OUT/$3.cpu" ${CLIENT_CPU[@]+"${CLIENT_CPU[@]}"} "$KURA" bench "$1" --target "resp://$ADDR" \
    -w "$WORKLOADS/workload$2" --records "$RECORDS" --operations "$OPERATIONS" --threads "$THREADS" \
    --progress none --plots=false --label kura-bench --out "$WORK/kb-$3" >"$OUT/$3.txt" 2>&1
}

ycsb load a go-ycsb-load && kbench load a kura-bench-load
echo "loaded $RECORDS records with each client"
pair=0
for w in a b c f d; do
  for r in $(seq "$REPEAT"); do
    if [ $((pair % 2)) = 0 ]; then
      ycsb run "$w" "go-ycsb-$w-$r"; kbench run "$w" "kura-bench-$w-$r"
    else
      kbench run "$w" "kura-bench-$w-$r"; ycsb run "$w" "go-ycsb-$w-$r"
    fi
    pair=$((pair + 1))
  done
  echo "workload $w done"
done
# E's scans read up to 100 records each: a twentieth of the operations takes about as long.
OPERATIONS=$((OPERATIONS / 20)) kbench run e kura-bench-e-1 ||
  echo "kura bench could not run workload e: $(head -n 1 "$OUT/kura-bench-e-1.txt")"
tail -n +2 "$OUT/kura-bench-e-1.txt" | head -n 4
scripts/bench-ycsb-summary.sh "$OUT" | tee "$OUT/summary.md"
