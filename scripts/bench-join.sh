#!/usr/bin/env bash
# Seed 004's experiment (issue 32, point 7), on this machine: a 3-node lsm cluster of RF 3
# holding data grows by 1 to 5 nodes, all at once (started together, planned as one change
# by the batching window) or one after another (each started once the previous change has
# finished), with 1 token and with 16 tokens per node, with and without a read load of 50
# ops/s at ONE, every node under the same stream limit; docs/bench/join.md reports it.
# Usage:
#
#   scripts/bench-join.sh [OUT]            (default OUT: bench-results/join)
#   QUICK=1 scripts/bench-join.sh [OUT]    (a reduced grid in a few minutes, to try the script)
#
# Environment (defaults for the full grid, QUICK's in brackets): RECORDS (300000 [30000]
# records of 10 fields × 100 B, YCSB's default 1 KB record), TOKENS ("1 16" [same]), COUNTS
# ("1 2 3 4 5" ["1 3"]: joiners at once; one after another runs the largest count once and
# reports the time to add the first k of it, and its first change is also adding 1 at
# once), LOADS ("none read" [read]), STREAM_LIMIT (3145728 [2097152] bytes per second each
# node sends and receives, set on every node), MEM_MAX (268435456: each node's memory
# cgroup limit, page cache included; 0 runs uncapped), READ_RATE (50), BASE_PORT (28000:
# ports BASE+1.. for gossip, +1000 internode, +2000 RESP, +3000 admin, below the ephemeral
# range), DIAGNOSE (1 adds, per token setting, the largest count at once without reads
# twice more: with the limit on the old nodes only, then on the new nodes only),
# KURA_BIN (a kura binary instead of building this tree's), KEEP (1 keeps the work
# directory).
#
# For each token setting the data is loaded once into a fresh 3-node cluster, the nodes
# stop cleanly and every run starts from a copy of their data directories, on the same
# ports (the metadata names them). Before the runs, a replacement (`kura server --replace`)
# streams a whole replica, unthrottled, to a fresh node: the stream bytes of one replica,
# the unit the minimum is computed in (scripts/bench-join/main.go), and the rate one node
# streams at without a limit. Each run leaves in OUT/runs/NAME the nodes' logs, /cluster
# before and after every change, the stream metrics after every change, the read load's
# result and row.json (scripts/bench-join analyze); OUT/tables.md and the plots come from
# `bench-join report`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/join}
if [ "${QUICK:-0}" = 1 ]; then
  RECORDS=${RECORDS:-30000} COUNTS=${COUNTS:-"1 3"} LOADS=${LOADS:-read} STREAM_LIMIT=${STREAM_LIMIT:-2097152}
fi
RECORDS=${RECORDS:-300000}
TOKENS=${TOKENS:-"1 16"}
COUNTS=${COUNTS:-"1 2 3 4 5"}
LOADS=${LOADS:-"none read"}
STREAM_LIMIT=${STREAM_LIMIT:-3145728}
MEM_MAX=${MEM_MAX:-268435456}
READ_RATE=${READ_RATE:-50}
BASE=${BASE_PORT:-28000}
MAXCOUNT=$(printf '%s\n' $COUNTS | sort -n | tail -n 1)
WORK=$(mktemp -d /tmp/kura-join.XXXXXX)
declare -A PIDS=()
READER=""
CGROOT=""
CGFILE=""

cleanup() {
  [ -z "$READER" ] || kill -INT "$READER" 2>/dev/null || true
  for k in "${!PIDS[@]}"; do kill -TERM "${PIDS[$k]}" 2>/dev/null || true; done
  for k in "${!PIDS[@]}"; do wait "${PIDS[$k]}" 2>/dev/null || true; done
  [ -z "$CGROOT" ] || for k in $(seq 8); do rmdir "$CGROOT/kura-join-n$k" 2>/dev/null || true; done
  [ "${KEEP:-0}" = 1 ] && echo "work directory kept: $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "${KURA_BIN:-}" ]; then
  KURA=$KURA_BIN
else
  go build -o "$WORK/kura" ./cmd/kura
  KURA=$WORK/kura
fi
go build -o "$WORK/bench-join" ./scripts/bench-join
HELPER=$WORK/bench-join

# A memory cgroup per node (v1: memory.limit_in_bytes; v2: memory.max), under the one this
# script runs in: each node's memory, page cache included, stays under MEM_MAX, below the
# data it holds. Where no cgroup can be made the nodes run uncapped, and say so.
if [ "$MEM_MAX" != 0 ]; then
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGROOT=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup) CGFILE=memory.max
  else
    CGROOT=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup) CGFILE=memory.limit_in_bytes
  fi
  if ! { mkdir -p "$CGROOT/kura-join-n1" && echo "$MEM_MAX" >"$CGROOT/kura-join-n1/$CGFILE"; } 2>/dev/null; then
    echo "cannot make a memory cgroup under $CGROOT: the nodes run uncapped" >&2
    CGROOT="" MEM_MAX=0
  fi
fi
MEM_CAP=$([ "$MEM_MAX" = 0 ] && echo none || echo "$((MEM_MAX >> 20)) MiB")

port() { echo $((BASE + $2 + $1)); } # port K OFFSET: gossip 0, internode 1000, RESP 2000, admin 3000
admin() { echo "127.0.0.1:$(port "$1" 3000)"; }

# start_node K DIR LOG CAPPED [flags...] starts node K on DIR, seeded by node 1 unless K
# is 1, in its memory cgroup when CAPPED is 1.
start_node() {
  local k=$1 dir=$2 log=$3 capped=$4
  shift 4
  local seeds=()
  [ "$k" = 1 ] || seeds=(--seeds "127.0.0.1:$(port 1 0)")
  local cg=""
  if [ "$capped" = 1 ] && [ -n "$CGROOT" ]; then
    cg=$CGROOT/kura-join-n$k
    mkdir -p "$cg"
    echo "$MEM_MAX" >"$cg/$CGFILE"
  fi
  (
    [ -z "$cg" ] || echo "$BASHPID" >"$cg/cgroup.procs"
    # Smaller caches than the defaults (256 MiB each), and a Go memory limit, so that a node
    # fits its cgroup with the data well beyond it.
    exec "$KURA" server --engine lsm --data-dir "$dir/n$k" --host "h$k" \
      --gossip-listen "127.0.0.1:$(port "$k" 0)" --internode-listen "127.0.0.1:$(port "$k" 1000)" \
      --listen "127.0.0.1:$(port "$k" 2000)" --admin-listen "$(admin "$k")" \
      --ring-source log --join-batch-window 10s --num-tokens "$T" --stream-limit "$LIMIT" \
      --request-timeout 10s --lsm-cache-size-bytes 33554432 --lsm-row-cache-bytes 16777216 \
      --memory-limit-bytes 134217728 ${seeds[@]+"${seeds[@]}"} "$@" >"$log" 2>&1
  ) &
  PIDS[$k]=$!
}

stop_nodes() {
  for k in "${!PIDS[@]}"; do kill -TERM "${PIDS[$k]}" 2>/dev/null || true; done
  for k in "${!PIDS[@]}"; do wait "${PIDS[$k]}" 2>/dev/null || true; done
  PIDS=()
}

# wait_ready K LOG: the node's ready line (its data opened, registered or bootstrapped).
wait_ready() {
  for _ in $(seq 600); do grep -qs "kura node ready" "$2" && return 0; sleep 0.2; done
  echo "node $1 not ready:" >&2
  tail -n 20 "$2" >&2
  return 1
}

# wait_settled N LIMIT_S: node 1 reports N normal members, all up, and no change in flight.
wait_settled() {
  local deadline=$((SECONDS + $2))
  until "$HELPER" settled -admin "$(admin 1)" -normal "$1"; do
    for k in "${!PIDS[@]}"; do
      kill -0 "${PIDS[$k]}" 2>/dev/null || { echo "node $k exited" >&2; return 1; }
    done
    if [ $SECONDS -ge $deadline ]; then
      echo "not settled at $1 normal members in $2 s:" >&2
      "$KURA" admin status --admin "$(admin 1)" >&2 || true
      return 1
    fi
    sleep 0.25
  done
}

node_id() { sed -n 's/.*kura node ready.* id=\([0-9a-f]*\).*/\1/p' "$1" | head -n 1; }

# scrape FILE K LOG: node K's stream metrics, headed by its ID.
scrape() {
  { echo "# id $(node_id "$3")"; curl -sf "http://$(admin "$2")/metrics" | grep '^kura_stream_\|^kura_metadata_epoch'; } >"$1" || true
}

targets() { echo "resp://127.0.0.1:$(port 1 2000),127.0.0.1:$(port 2 2000),127.0.0.1:$(port 3 2000)"; }

# start_reads OUTDIR: the read load in the background, READ_RATE ops/s at ONE over every
# record (uniform, so that reads fall in the moving ranges too), coordinated by the three
# first nodes, until stop_reads; its result (latency percentiles) goes to OUTDIR.
start_reads() {
  "$KURA" bench run -w read-only --target "$(targets)" --records "$RECORDS" --rate "$READ_RATE" \
    --consistency ONE --threads 4 -p requestdistribution=uniform --seed 7 --progress none \
    --label reads-at-one --plots=false --out "$1" --duration 3h >"$1.txt" 2>&1 &
  READER=$!
}
stop_reads() {
  kill -INT "$READER"
  wait "$READER" || true
  READER=""
}

# load_base: a fresh cluster of 3 (uncapped: loading is not measured), RECORDS records at
# QUORUM, then a clean stop; its data directories are every run's starting point.
load_base() {
  local dir=$WORK/base-$T LIMIT=$STREAM_LIMIT
  mkdir -p "$dir"
  if [ "$T" = 1 ]; then
    # A new cluster's first node with one token panics in ring.BalancedJoinTokens (its
    # refinement takes the only token of the only node out: "no nodes with tokens"). Its
    # one token may go anywhere, so it bootstraps with random allocation, stops, and runs
    # from then on as every other node (the joiners' tokens are chosen by the leader, node
    # 1, with its own allocation: balanced).
    start_node 1 "$dir" "$dir/n1-bootstrap.log" 0 --token-allocation random
    wait_ready 1 "$dir/n1-bootstrap.log"
    stop_nodes
  fi
  start_node 1 "$dir" "$dir/n1.log" 0
  wait_ready 1 "$dir/n1.log"
  start_node 2 "$dir" "$dir/n2.log" 0
  start_node 3 "$dir" "$dir/n3.log" 0
  wait_settled 3 120
  local t=$SECONDS
  "$KURA" bench load -w read-only --target "$(targets)" --records "$RECORDS" --threads 32 --seed 42 \
    --progress none --plots=false --label "load-t$T" --out "$OUT/load-t$T" | sed -n 1,2p
  echo "loaded $RECORDS records with $T token(s) per node in $((SECONDS - t)) s; $(du -sm "$dir/n1" | cut -f1) MB in node 1's directory"
  stop_nodes
}

# fresh_run DIR: the base's data directories, copied.
fresh_run() {
  rm -rf "$WORK/run"
  mkdir -p "$WORK/run" "$1/logs"
  cp -a "$WORK/base-$T/n1" "$WORK/base-$T/n2" "$WORK/base-$T/n3" "$WORK/run/"
}

# start_three DIR: nodes 1-3 on the copy, capped. Node 1 first: a restarted node of a
# --ring-source=log cluster asks its seeds (node 1) once, and if none answers it stays out
# of gossip for good (node/ringlog.go joinLog; the gossip mode retries for 30 s), which
# would leave 2 and 3 down in node 1's eyes.
start_three() {
  start_node 1 "$WORK/run" "$1/logs/n1.log" 1
  wait_ready 1 "$1/logs/n1.log" || return 1
  for k in 2 3; do start_node "$k" "$WORK/run" "$1/logs/n$k.log" 1; done
  wait_settled 3 180
}

# calibrate: on a copy of the base, unthrottled, node 3 is stopped and node 4 replaces it,
# receiving a whole replica: REPLICA_BYTES, in the stream's own unit. With a read load,
# first 20 s of reads with no change, the baseline of the runs' read latency.
calibrate() {
  local cal=$OUT/cal-t$T
  fresh_run "$cal"
  LIMIT=0 start_three "$cal"
  if [[ " $LOADS " == *" read "* ]]; then
    "$KURA" bench run -w read-only --target "$(targets)" --records "$RECORDS" --rate "$READ_RATE" \
      --consistency ONE --threads 4 -p requestdistribution=uniform --seed 7 --progress none \
      --label reads-at-one --plots=false --out "$cal/reads" --duration 20s | sed -n 1,3p
  fi
  local id3
  id3=$(node_id "$cal/logs/n3.log")
  kill -TERM "${PIDS[3]}"
  wait "${PIDS[3]}" || true
  unset 'PIDS[3]'
  local deadline=$((SECONDS + 60))
  until curl -sf "http://$(admin 1)/cluster" | jq -e --arg id "$id3" '.members[] | select(.id == $id) | .up == false' >/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "node 3 not seen down" >&2; return 1; }
    sleep 0.25
  done
  local t0 t1
  t0=$(date +%s%N)
  LIMIT=0 start_node 4 "$WORK/run" "$cal/logs/n4.log" 1 --replace "$id3"
  wait_ready 4 "$cal/logs/n4.log"
  wait_settled 3 900
  t1=$(date +%s%N)
  REPLICA_BYTES=$(curl -sf "http://$(admin 4)/metrics" | awk '/^kura_stream_received_bytes_total/ {s += $2} END {printf "%.0f", s}')
  curl -sf "http://$(admin 1)/cluster" >"$cal/cluster-after.json"
  stop_nodes
  local took
  took=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
  cat >"$cal/cal.env" <<EOF
tokens=$T
records=$RECORDS
replica_bytes=$REPLICA_BYTES
replace_s=$took
uptime=$(uptime)
EOF
  echo "a replica is $REPLICA_BYTES stream bytes ($T token(s)); replacing a node, unthrottled, took $took s from its start"
}

# run_once MODE COUNT LOAD VARIANT DIR: one run from a fresh copy; non-zero if a node did
# not start or a change did not finish. VARIANT, for the diagnosis only: send-only (the
# new nodes unlimited) or receive-only (the old nodes unlimited); empty: every node limited.
run_once() {
  local mode=$1 count=$2 load=$3 variant=$4 r=$5
  local old_limit=$STREAM_LIMIT new_limit=$STREAM_LIMIT
  case "$variant" in
  send-only) new_limit=0 ;;
  receive-only) old_limit=0 ;;
  esac
  rm -rf "$r"
  fresh_run "$r"
  LIMIT=$old_limit start_three "$r" || return 1
  local steps=1
  [ "$mode" = at-once ] || steps=$count
  for k in 1 2 3; do scrape "$r/metrics-0-$k.txt" "$k" "$r/logs/n$k.log"; done
  curl -sf "http://$(admin 1)/cluster" >"$r/cluster-0.json"
  cat >"$r/run.env" <<EOF
tokens=$T
mode=$mode
count=$count
load=$load
variant=$variant
limit=$STREAM_LIMIT
records=$RECORDS
replica_bytes=$REPLICA_BYTES
mem_cap=$MEM_CAP
steps=$steps
uptime=$(uptime)
EOF
  if [ "$load" = read ]; then
    start_reads "$r/reads"
    sleep 5
  fi
  local s nodes
  for s in $(seq "$steps"); do
    if [ "$mode" = at-once ]; then nodes=$(seq 4 $((3 + count))); else nodes=$((3 + s)); fi
    nodes=$(echo $nodes)
    echo "t0=$(date +%s%N)" >"$r/step-$s.env"
    echo "nodes=$nodes" >>"$r/step-$s.env"
    for k in $nodes; do LIMIT=$new_limit start_node "$k" "$WORK/run" "$r/logs/n$k.log" 1; done
    # Every node up to the step's last is normal: the step's change has finished.
    wait_settled "${nodes##* }" 1200 || return 1
    for k in "${!PIDS[@]}"; do scrape "$r/metrics-$s-$k.txt" "$k" "$r/logs/n$k.log"; done
    curl -sf "http://$(admin 1)/cluster" >"$r/cluster-$s.json"
  done
  [ -z "$READER" ] || stop_reads
  stop_nodes
  "$HELPER" analyze "$r"
}

# run_case MODE COUNT LOAD [VARIANT]: a run, tried again once if it fails (a port taken by
# another program on this shared machine, say); a run that fails twice is marked and
# skipped.
run_case() {
  local name=t$T-$1-$2-$3${4:+-$4}
  local r=$OUT/runs/$name
  for try in 1 2; do
    if run_once "$1" "$2" "$3" "${4:-}" "$r"; then
      jq -r --arg n "$name" '"\($n): \(.time_s | . * 10 | round / 10) s (streaming \([.steps[] | .finished_s - .planned_s] | add | . * 10 | round / 10) s), bound \([.steps[].bound_s] | add | . * 10 | round / 10) s, moved \(.sent_bytes) B, minimum \(.minimum_bytes) B (moved/minimum \(.sent_bytes / .minimum_bytes | . * 10000 | round / 10000))"' "$r/row.json"
      return 0
    fi
    [ -z "$READER" ] || stop_reads
    stop_nodes
    echo "$name: try $try failed (logs in $r/logs)"
    [ "$try" = 2 ] || mv "$r" "$r.failed-$try"
  done
  touch "$r/failed"
}

rm -rf "$OUT"
mkdir -p "$OUT/runs"
echo "# $(date -u +%FT%TZ) nproc=$(nproc) $(uptime) records=$RECORDS tokens=\"$TOKENS\" counts=\"$COUNTS\" loads=\"$LOADS\" stream_limit=$STREAM_LIMIT mem_cap=$MEM_CAP read_rate=$READ_RATE quick=${QUICK:-0} diagnose=${DIAGNOSE:-0} kura=$(git rev-parse --short HEAD 2>/dev/null || echo '?')" | tee "$OUT/conditions.txt"
for T in $TOKENS; do
  load_base
  calibrate
  for load in $LOADS; do
    # Adding one node at once is the first change of adding them one after another: the
    # same start, so it is not run twice.
    for count in $COUNTS; do
      [ "$count" = 1 ] && [ "$MAXCOUNT" -ge 2 ] || run_case at-once "$count" "$load"
    done
    [ "$MAXCOUNT" -lt 2 ] || run_case one-by-one "$MAXCOUNT" "$load"
  done
  if [ "${DIAGNOSE:-0}" = 1 ]; then
    for variant in send-only receive-only; do run_case at-once "$MAXCOUNT" none "$variant"; done
  fi
done
echo "# done $(date -u +%FT%TZ) $(uptime)" | tee -a "$OUT/conditions.txt"
"$HELPER" report -out "$OUT" "$OUT"
