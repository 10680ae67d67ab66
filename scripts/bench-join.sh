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
# range), DIAGNOSE (counts, e.g. "3 5": per token setting, each count at once without
# reads twice more, with the limit on the old nodes only, then on the new nodes only), GRID
# (0 skips the experiment's runs, for a diagnosis alone), ONE_BY_ONE (0 runs only the
# additions at once), RESUME (0 skips the resumed join: per token setting, one node joins,
# is SIGKILLed once it has recorded RESUME_FRACTION, default 0.5, of what it will receive,
# and is started again), KURA_BIN (a kura binary instead of building this tree's), KEEP (1
# keeps the work directory). Every run also samples each node's stream counters once a
# second (timeline.txt in its directory).
#
# For each token setting the data is loaded once into a fresh 3-node cluster, the nodes
# stop cleanly and every run starts from a copy of their data directories, on the same
# ports (the metadata names them). Before the runs, every row's size in stream bytes is
# read from a copy of a replica (OUT/cal-tT/rowsizes.bin: the unit of the minimum and the
# bound, scripts/bench-join/main.go), and one node is added with no limit on any node (the
# rate a node streams at unthrottled). Each run leaves in OUT/runs/NAME the nodes' logs,
# /cluster before and after every change, the stream metrics after every change, the
# nodes' peak memory, the read load's result and row.json (scripts/bench-join analyze);
# OUT/tables.md and the plots come from `bench-join report`.
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
TIMELINE=""
CGROOT=""
CGFILE=""

cleanup() {
  [ -z "$READER" ] || kill -INT "$READER" 2>/dev/null || true
  [ -z "$TIMELINE" ] || kill "$TIMELINE" 2>/dev/null || true
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
    [ "$CGFILE" != memory.limit_in_bytes ] || echo 0 >"$cg/memory.max_usage_in_bytes" 2>/dev/null || true
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

# start_timeline FILE: every second, each running node's stream bytes sent and received
# (its counters), "UNIX_NS NODE SENT RECEIVED" a line, until stop_timeline.
start_timeline() {
  (
    while :; do
      local now k m
      now=$(date +%s%N)
      for k in $(seq 8); do
        m=$(curl -sf -m 1 "http://$(admin "$k")/metrics" 2>/dev/null) || continue
        awk -v t="$now" -v k="$k" '/^kura_stream_sent_bytes_total/ {s += $2} /^kura_stream_received_bytes_total/ {r += $2}
          END {printf "%s %d %.0f %.0f\n", t, k, s, r}' <<<"$m"
      done
      sleep 1
    done
  ) >"$1" &
  TIMELINE=$!
}
stop_timeline() {
  [ -z "$TIMELINE" ] || { kill "$TIMELINE" 2>/dev/null || true; wait "$TIMELINE" 2>/dev/null || true; }
  TIMELINE=""
}

# mem_peaks: each running node's cgroup's peak memory (page cache included) since it
# started, "K BYTES" a line (v2 reports the cgroup's peak over its life).
mem_peaks() {
  [ -n "$CGROOT" ] || return 0
  local f=memory.max_usage_in_bytes
  [ "$CGFILE" = memory.limit_in_bytes ] || f=memory.peak
  for k in "${!PIDS[@]}"; do echo "$k $(cat "$CGROOT/kura-join-n$k/$f" 2>/dev/null || echo 0)"; done
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

# calibrate: the size of every row in stream bytes, from a copy of node 1's store
# (bench-join rowsizes: the unit of the minimum and the bound); then, with a read load,
# 20 s of reads with no change (the baseline of the runs' read latency); then one node
# added with no stream limit on any node (what a node streams unthrottled).
calibrate() {
  local cal=$OUT/cal-t$T
  fresh_run "$cal"
  SIZES=$(cd "$OUT" && pwd)/cal-t$T/rowsizes.bin
  "$HELPER" rowsizes -store "$WORK/run/n1/lsm" -out "$SIZES" | sed "s/^/node 1's replica ($T token(s)): /"
  if [[ " $LOADS " == *" read "* ]]; then
    LIMIT=0 start_three "$cal"
    "$KURA" bench run -w read-only --target "$(targets)" --records "$RECORDS" --rate "$READ_RATE" \
      --consistency ONE --threads 4 -p requestdistribution=uniform --seed 7 --progress none \
      --label reads-at-one --plots=false --out "$cal/reads" --duration 20s | sed -n 1,3p
    stop_nodes
  fi
  run_case at-once 1 none unthrottled
}

# run_once MODE COUNT LOAD VARIANT DIR: one run from a fresh copy; non-zero if a node did
# not start or a change did not finish. VARIANT is empty for the experiment's runs (every
# node limited); unthrottled (no node limited) for the calibration; send-only (the new
# nodes unlimited) or receive-only (the old nodes unlimited) for the diagnosis.
run_once() {
  local mode=$1 count=$2 load=$3 variant=$4 r=$5
  local old_limit=$STREAM_LIMIT new_limit=$STREAM_LIMIT
  case "$variant" in
  unthrottled) old_limit=0 new_limit=0 ;;
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
sizes=$SIZES
mem_cap=$MEM_CAP
steps=$steps
uptime=$(uptime)
EOF
  start_timeline "$r/timeline.txt"
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
  stop_timeline
  mem_peaks >"$r/mem-peak.txt"
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
    stop_timeline
    stop_nodes
    echo "$name: try $try failed (logs in $r/logs)"
    [ "$try" = 2 ] || mv "$r" "$r.failed-$try"
  done
  touch "$r/failed"
}

# stream_sent K: node K's kura_stream_sent_bytes_total.
stream_sent() {
  curl -sf "http://$(admin "$1")/metrics" | awk '/^kura_stream_sent_bytes_total/ {s += $2} END {printf "%.0f", s}'
}

# progress_bytes DIR: what a node's progress files record, "BYTES DONE": the bytes applied
# and the transfers done.
progress_bytes() {
  local files=("$1"/streams/change-*/transfer-*.json)
  [ -e "${files[0]}" ] || { echo "0 0"; return 0; }
  jq -s -r '"\(map(.bytes) | add) \(map(select(.done)) | length)"' "${files[@]}"
}

# resume_case: seed 004's resumption at the experiment's scale. One node joins under the
# stream limit, is SIGKILLed once its progress files record RESUME_FRACTION (default 0.5)
# of what it will receive (3/4 of a replica: RF 3 over 4 nodes), and is started again on
# the same directory. What the sources had sent before the kill less what the joiner had
# recorded is what they send again; OUT/resume-tT.env holds the figures.
resume_case() {
  local r=$OUT/runs/t$T-resume
  rm -rf "$r"
  fresh_run "$r"
  LIMIT=$STREAM_LIMIT start_three "$r" || return 1
  local at t0=$SECONDS rec=0 done=0
  at=$(od -An -v -tu4 -w12 -j8 "$SIZES" | awk -v f="${RESUME_FRACTION:-0.5}" '{s += $1} END {printf "%.0f", s * 0.75 * f}')
  LIMIT=$STREAM_LIMIT start_node 4 "$WORK/run" "$r/logs/n4.log" 1
  until [ "$rec" -ge "$at" ]; do
    [ $((SECONDS - t0)) -lt 1200 ] || { echo "resume: the joiner never recorded $at B" >&2; return 1; }
    sleep 0.5
    read -r rec done < <(progress_bytes "$WORK/run/n4")
  done
  kill -KILL "${PIDS[4]}"
  wait "${PIDS[4]}" 2>/dev/null || true
  unset 'PIDS[4]'
  local killed_s=$((SECONDS - t0)) sent_before=0 sent_total=0 k
  read -r rec done < <(progress_bytes "$WORK/run/n4")
  for k in 1 2 3; do sent_before=$((sent_before + $(stream_sent "$k"))); done
  LIMIT=$STREAM_LIMIT start_node 4 "$WORK/run" "$r/logs/n4-restarted.log" 1
  wait_settled 4 1200 || return 1
  for k in 1 2 3; do sent_total=$((sent_total + $(stream_sent "$k"))); done
  stop_nodes
  local resent=$((sent_before - rec)) pct
  pct=$(awk -v a="$resent" -v b="$sent_before" 'BEGIN {printf "%.2f", 100 * a / b}')
  cat >"$OUT/resume-t$T.env" <<EOF
tokens=$T
limit=$STREAM_LIMIT
killed_after_s=$killed_s
transfers_done_at_kill=$done
sent_before_kill=$sent_before
recorded_at_kill=$rec
sent_after_restart=$((sent_total - sent_before))
sent_total=$sent_total
resent=$resent
resent_percent=$pct
uptime=$(uptime)
EOF
  echo "t$T resume: SIGKILLed after $killed_s s with $rec B recorded and $sent_before B sent; $resent B sent again, $pct% of what it had been sent"
}

rm -rf "$OUT"
mkdir -p "$OUT/runs"
echo "# $(date -u +%FT%TZ) nproc=$(nproc) $(uptime) records=$RECORDS tokens=\"$TOKENS\" counts=\"$COUNTS\" loads=\"$LOADS\" stream_limit=$STREAM_LIMIT mem_cap=$MEM_CAP read_rate=$READ_RATE quick=${QUICK:-0} diagnose="${DIAGNOSE:-}" grid=${GRID:-1} kura=$(git rev-parse --short HEAD 2>/dev/null || echo '?')" | tee "$OUT/conditions.txt"
for T in $TOKENS; do
  load_base
  calibrate
  if [ "${GRID:-1}" = 1 ]; then
    for load in $LOADS; do
      # Adding one node at once is the first change of adding them one after another: the
      # same start, so it is not run twice.
      for count in $COUNTS; do
        [ "$count" = 1 ] && [ "$MAXCOUNT" -ge 2 ] || run_case at-once "$count" "$load"
      done
      [ "$MAXCOUNT" -lt 2 ] || [ "${ONE_BY_ONE:-1}" = 0 ] || run_case one-by-one "$MAXCOUNT" "$load"
    done
  fi
  [ "${RESUME:-1}" = 0 ] || resume_case || { stop_nodes; echo "t$T resume: failed (logs in $OUT/runs/t$T-resume/logs)"; }
  for count in ${DIAGNOSE:-}; do
    for variant in send-only receive-only; do run_case at-once "$count" none "$variant"; done
  done
done
echo "# done $(date -u +%FT%TZ) $(uptime)" | tee -a "$OUT/conditions.txt"
"$HELPER" report -out "$OUT" "$OUT"
