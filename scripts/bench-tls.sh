#!/usr/bin/env bash
# The cost of TLS, side by side: a 3-node local cluster (one lsm node per host, RF 3,
# QUORUM) under `kura dev` (plain text) and under `kura dev --secure` (clients over TLS
# with a password, mutual TLS between nodes, encrypted gossip, admin over HTTPS), YCSB
# workloads A and C with 1 KB records (10 fields of 100 bytes), the two configurations
# alternated ROUNDS times in one run; then new connections per second (dial, handshake,
# AUTH, PING, close) to each, with TLS both as full handshakes and with sessions resumed.
# Usage:
#
#   scripts/bench-tls.sh [OUT]        (default OUT: bench-results/tls)
#
# Environment: RECORDS (100000), THREADS (40), RUN (20s), WARMUP (10s), ROUNDS (3),
# CONNECT (5s, each connect run), BASE_PORT (46380), KURA_BIN (a built kura).
# Each configuration keeps its data between rounds (loaded once); each round restarts it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/tls}
RECORDS=${RECORDS:-100000}
THREADS=${THREADS:-40}
RUN=${RUN:-20s}
WARMUP=${WARMUP:-10s}
ROUNDS=${ROUNDS:-3}
CONNECT=${CONNECT:-5s}
BASE=${BASE_PORT:-46380}
WORK=$(mktemp -d /tmp/kura-tls.XXXXXX)
DEV_PID=""
stop_dev() {
  if [ -n "$DEV_PID" ]; then kill -INT "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  DEV_PID=""
}
cleanup() {
  pkill -f "^$KURA bench" 2>/dev/null || true
  stop_dev
  [ -n "${FAILED:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
if [ -n "${KURA_BIN:-}" ]; then
  KURA=$KURA_BIN
else
  go build -o "$WORK/kura" ./cmd/kura
  KURA=$WORK/kura
fi
rm -rf "$OUT"
mkdir -p "$OUT"

# start_dev CONF: starts the configuration's cluster and sets TARGET.
start_dev() {
  local flags=()
  [ "$1" = tls ] && flags=(--secure)
  "$KURA" dev --hosts 3 --engines lsm --data-dir "$WORK/$1" --base-port "$BASE" ${flags[@]+"${flags[@]}"} >"$WORK/dev-$1.out" 2>&1 &
  DEV_PID=$!
  for _ in $(seq 240); do grep -q "Ctrl-C stops" "$WORK/dev-$1.out" && break; sleep 0.5; done
  grep -q "Ctrl-C stops" "$WORK/dev-$1.out" || { FAILED=1; cat "$WORK/dev-$1.out" >&2; exit 1; }
  local addrs="127.0.0.1:$BASE,127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"
  if [ "$1" = tls ]; then
    TARGET="resps://$addrs?cacert=$WORK/tls/certs/ca.crt&password=$(cat "$WORK/tls/certs/password")"
  else
    TARGET="resp://$addrs"
  fi
}

echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS threads=$THREADS run=$RUN warmup=$WARMUP rounds=$ROUNDS cluster=3x lsm RF3 QUORUM" | tee "$OUT/conditions.txt"
for conf in plain tls; do
  start_dev "$conf"
  "$KURA" bench load -w a --target "$TARGET" --records "$RECORDS" --threads "$THREADS" --progress none --seed 42 \
    --label "$conf" --out "$OUT/$conf-load" --plots=false | sed -n 1p
  stop_dev
done
for r in $(seq "$ROUNDS"); do
  for conf in plain tls; do
    echo "== round $r, $conf ($(cut -d' ' -f1-3 /proc/loadavg))"
    start_dev "$conf"
    for w in a c; do
      "$KURA" bench run -w "$w" --target "$TARGET" --records "$RECORDS" --threads "$THREADS" --progress none --seed 42 \
        --label "$conf" --duration "$RUN" --warmup "$WARMUP" --out "$OUT/$conf-$w-$r" --plots=false | sed -n 1p
    done
    "$KURA" bench connect --target "$TARGET" --threads 4 --duration "$CONNECT" --tls-resume=false | tee "$OUT/$conf-connect-$r.txt"
    if [ "$conf" = tls ]; then
      "$KURA" bench connect --target "$TARGET" --threads 4 --duration "$CONNECT" | tee "$OUT/$conf-resumed-$r.txt"
    fi
    stop_dev
  done
done

python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/ratios.md"
import json, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def res(conf, w, r):
    d = json.load(open(f"{out}/{conf}-{w}-{r}/result.json"))
    p99 = {o["op"]: o["p99_us"] / 1000 for o in d["operations"]}
    return d["throughput_ops"], p99
print("| workload | round | plain ops/s | TLS ops/s | TLS ÷ plain | plain p99 (ms) | TLS p99 (ms) |")
print("|---|--:|--:|--:|--:|--:|--:|")
for w in ["a", "c"]:
    ratios = []
    for r in range(1, rounds + 1):
        (tp, pp), (tt, pt) = res("plain", w, r), res("tls", w, r)
        ratios.append(tt / tp)
        fmt = lambda p: " / ".join(f"{k} {v:.1f}" for k, v in sorted(p.items()))
        print(f"| {w.upper()} | {r} | {tp:,.0f} | {tt:,.0f} | {tt/tp:.2f} | {fmt(pp)} | {fmt(pt)} |")
    print(f"| {w.upper()} | median | | | **{statistics.median(ratios):.2f}** | | |")
print()
print("| round | plain connections/s | TLS, full handshakes/s | ÷ plain | TLS, sessions resumed/s | ÷ plain |")
print("|--:|--:|--:|--:|--:|--:|")
for r in range(1, rounds + 1):
    rate = lambda f: float(re.search(r": ([0-9.]+)/s", open(f"{out}/{f}-{r}.txt").read()).group(1))
    p, f, res = rate("plain-connect"), rate("tls-connect"), rate("tls-resumed")
    print(f"| {r} | {p:,.0f} | {f:,.0f} | {f/p:.2f} | {res:,.0f} | {res/p:.2f} |")
PY
