#!/usr/bin/env bash
# Issue 33's experiment on the real cluster (point 7): a 6-host lsm cluster of RF 3 holding
# data loses a node to SIGKILL, `kura admin removenode` takes it out, and the survivors
# stream among themselves until every range has 3 live replicas again, every node under
# the same stream limit, while a foreground load runs at a fixed rate at QUORUM;
# docs/bench/recover.md reports it. Usage:
#
#   scripts/bench-recover.sh [OUT]            (default OUT: bench-results/recover)
#   QUICK=1 scripts/bench-recover.sh [OUT]    (a reduced run in a few minutes, to try the script)
#
# Environment (defaults, QUICK's in brackets): RECORDS (150000 [20000] records of 10 fields
# × 100 B, YCSB's 1 KB), TOKENS (16: tokens per node; a list such as "1 16" runs each),
# MEM_MAX (268435456: each node's memory cgroup limit, page cache included; 0 uncapped),
# STREAM_LIMIT (empty: LIMIT_FRACTION, default 0.5, of the unthrottled rate the
# calibration measured, the rate every node streamed at in its recovery, rounded up; bytes per second each node sends and receives, set on
# every node with `kura admin stream-limit`), CALIBRATE (1: first the same run with no
# limit anywhere, which measures the unthrottled rate; 0 skips it and needs STREAM_LIMIT),
# RUNS (1: limited runs per token setting), LOAD_SHARE (0.3: the foreground rate as a
# share of the saturation measured with `kura bench run -w a` for SAT_S, 20 s [10 s]),
# BEFORE_S (30 [15]: seconds of load before the kill, the "before" latency window),
# AFTER_S (5), VICTIM (6: the node killed; 5 if 6 leads the metadata log), BASE_PORT
# (29000: ports BASE+1.. for gossip, +1000 internode, +2000 RESP, +3000 admin),
# RECOVERY_TIMEOUT (1800 [300] s: a recovery not finished by then fails the run, leaving
# each survivor's /cluster in cluster-stuck-K.json), SERVER_FLAGS (more kura server flags,
# e.g. --durability=periodic), SERVER_GOMAXPROCS (the nodes' GOMAXPROCS, not the load's;
# --background-priority low adds 3 to the default), KURA_BIN (a kura binary instead of building this tree's),
# PROFILE (1: CPU profiles of every node, the before window's last 10 s and the recovery's
# first 15 s, in the run's directory as cpu-before-nK.pprof and cpu-during-nK.pprof, and
# each survivor's /debug/store once the recovery is over, store-after-nK.txt),
# LABEL (a prefix of the runs' names, e.g. the binary's commit), KEEP (1 keeps the work
# directory), REPORT (the report's path: docs/bench/recover.md
# [OUT/recover.md]).
#
# The data is loaded once per token setting into a fresh 6-node cluster (uncapped:
# loading is not measured), the nodes stop cleanly, every row's size in stream bytes is
# read from copies of all six stores (OUT/tT/rowsizes.bin, the unit of the lost bytes and
# the bound), and every run starts from a copy of the data directories, on the same
# ports. A run: the nodes start capped, the limit is set, the foreground load
# (bench-recover load: YCSB A's mix at QUORUM through the five survivors, every operation
# logged) runs BEFORE_S, the victim is SIGKILLed, removenode is sent until the survivors
# accept it (they must hold the node down first), the script waits until node 1 reports 5
# normal members and no change, the load runs AFTER_S more and stops, and every
# acknowledged write is read back at ALL. Each run's directory OUT/runs/NAME holds the
# nodes' logs, /cluster before and after, the stream counters before and after, the
# timeline (timeline.jsonl: every node's status and counters once a second), the ops log,
# verify.json, run.env and row.json (bench-recover analyze).
set -euo pipefail
# From the repository's root (a copy of the script run from there stays there).
[ -f go.mod ] && [ -d scripts/bench-recover ] || cd "$(dirname "$0")/.."
OUT=${1:-bench-results/recover}
if [ "${QUICK:-0}" = 1 ]; then
  RECORDS=${RECORDS:-20000} SAT_S=${SAT_S:-10} BEFORE_S=${BEFORE_S:-15} REPORT=${REPORT:-$OUT/recover.md}
  RECOVERY_TIMEOUT=${RECOVERY_TIMEOUT:-300}
fi
RECORDS=${RECORDS:-150000}
TOKENS=${TOKENS:-16}
MEM_MAX=${MEM_MAX:-268435456}
LIMIT_FRACTION=${LIMIT_FRACTION:-0.5}
CALIBRATE=${CALIBRATE:-1}
RUNS=${RUNS:-1}
LOAD_SHARE=${LOAD_SHARE:-0.3}
SAT_S=${SAT_S:-20}
BEFORE_S=${BEFORE_S:-30}
AFTER_S=${AFTER_S:-5}
REPORT=${REPORT:-docs/bench/recover.md}
RECOVERY_TIMEOUT=${RECOVERY_TIMEOUT:-1800}
SERVER_FLAGS=${SERVER_FLAGS:-}
LABEL=${LABEL:-}
BASE=${BASE_PORT:-29000}
NODES=6
WORK=$(mktemp -d /tmp/kura-recover.XXXXXX)
declare -A PIDS=()
LOADER=""
TIMELINE=""
CGROOT=""
CGFILE=""

cleanup() {
  [ -z "$LOADER" ] || kill -INT "$LOADER" 2>/dev/null || true
  [ -z "$TIMELINE" ] || kill "$TIMELINE" 2>/dev/null || true
  for k in "${!PIDS[@]}"; do kill -TERM "${PIDS[$k]}" 2>/dev/null || true; done
  for k in "${!PIDS[@]}"; do wait "${PIDS[$k]}" 2>/dev/null || true; done
  [ -z "$CGROOT" ] || for k in $(seq $NODES); do rmdir "$CGROOT/kura-recover-n$k" 2>/dev/null || true; done
  [ "${KEEP:-0}" = 1 ] && echo "work directory kept: $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "${KURA_BIN:-}" ]; then
  KURA=$KURA_BIN
else
  nice -n 19 go build -o "$WORK/kura" ./cmd/kura
  KURA=$WORK/kura
fi
nice -n 19 go build -o "$WORK/bench-recover" ./scripts/bench-recover
HELPER=$WORK/bench-recover

# A memory cgroup per node (v1: memory.limit_in_bytes; v2: memory.max), as bench-join.sh
# makes them; where none can be made the nodes run uncapped, and say so.
if [ "$MEM_MAX" != 0 ]; then
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGROOT=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup) CGFILE=memory.max
  else
    CGROOT=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup) CGFILE=memory.limit_in_bytes
  fi
  if ! { mkdir -p "$CGROOT/kura-recover-n1" && echo "$MEM_MAX" >"$CGROOT/kura-recover-n1/$CGFILE"; } 2>/dev/null; then
    echo "cannot make a memory cgroup under $CGROOT: the nodes run uncapped" >&2
    CGROOT="" MEM_MAX=0
  fi
fi
MEM_CAP=$([ "$MEM_MAX" = 0 ] && echo none || echo "$((MEM_MAX >> 20)) MiB")

port() { echo $((BASE + $2 + $1)); } # port K OFFSET: gossip 0, internode 1000, RESP 2000, admin 3000
admin() { echo "127.0.0.1:$(port "$1" 3000)"; }
resp() { echo "127.0.0.1:$(port "$1" 2000)"; }

# start_node K DIR LOG CAPPED starts node K on DIR/nK, seeded by node 1 unless K is 1, in
# its memory cgroup when CAPPED is 1, with no stream limit (the run sets it).
start_node() {
  local k=$1 dir=$2 log=$3 capped=$4
  local seeds=()
  [ "$k" = 1 ] || seeds=(--seeds "127.0.0.1:$(port 1 0)")
  local cg=""
  if [ "$capped" = 1 ] && [ -n "$CGROOT" ]; then
    cg=$CGROOT/kura-recover-n$k
    mkdir -p "$cg"
    echo "$MEM_MAX" >"$cg/$CGFILE"
    [ "$CGFILE" != memory.limit_in_bytes ] || echo 0 >"$cg/memory.max_usage_in_bytes" 2>/dev/null || true
  fi
  (
    [ -z "$cg" ] || echo "$BASHPID" >"$cg/cgroup.procs"
    # bench-join's smaller caches and Go memory limit, so that a node fits its cgroup.
    [ -z "${SERVER_GOMAXPROCS:-}" ] || export GOMAXPROCS=$SERVER_GOMAXPROCS
    exec "$KURA" server --engine lsm --data-dir "$dir/n$k" --host "h$k" \
      --gossip-listen "127.0.0.1:$(port "$k" 0)" --internode-listen "127.0.0.1:$(port "$k" 1000)" \
      --listen "$(resp "$k")" --admin-listen "$(admin "$k")" \
      --ring-source log --join-batch-window 10s --num-tokens "$T" --stream-limit 0 \
      --request-timeout 10s --lsm-cache-size-bytes 33554432 --lsm-row-cache-bytes 16777216 \
      --memory-limit-bytes 134217728 ${seeds[@]+"${seeds[@]}"} $SERVER_FLAGS >"$log" 2>&1
  ) &
  PIDS[$k]=$!
}

stop_nodes() {
  for k in "${!PIDS[@]}"; do kill -TERM "${PIDS[$k]}" 2>/dev/null || true; done
  for k in "${!PIDS[@]}"; do wait "${PIDS[$k]}" 2>/dev/null || true; done
  PIDS=()
}

wait_ready() {
  for _ in $(seq 600); do grep -qs "kura node ready" "$2" && return 0; sleep 0.2; done
  echo "node $1 not ready:" >&2
  tail -n 20 "$2" >&2
  return 1
}

# settled N: every running node reports N normal members, all up, and no change in
# flight (node 1 alone is not enough: a node whose gossip still holds two others down
# answers UNAVAILABLE at QUORUM).
settled() {
  local k
  for k in "${!PIDS[@]}"; do "$HELPER" settled -admin "$(admin "$k")" -normal "$1" || return 1; done
}

# wait_settled N LIMIT_S: until settled N.
wait_settled() {
  local deadline=$((SECONDS + $2))
  until settled "$1"; do
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
scrape() { curl -sf -m 5 "http://$(admin "$2")/metrics" | grep '^kura_stream_\|^kura_metadata_epoch' >"$1" || true; }

# start_cluster DIR LOGS CAPPED: node 1 first (a restarted node of a --ring-source=log
# cluster asks its seed once), then the others together.
start_cluster() {
  start_node 1 "$1" "$2/n1.log" "$3"
  wait_ready 1 "$2/n1.log" || return 1
  for k in $(seq 2 $NODES); do start_node "$k" "$1" "$2/n$k.log" "$3"; done
  wait_settled $NODES 300
}

survivors() { local k out=(); for k in $(seq $NODES); do [ "$k" = "$VIC" ] || out+=("$(resp "$k")"); done; local IFS=,; echo "${out[*]}"; }
all_admins() { local k out=(); for k in $(seq $NODES); do out+=("$k=$(admin "$k")"); done; local IFS=,; echo "${out[*]}"; }

# load_base: a fresh cluster, RECORDS records at QUORUM, a clean stop, and every row's
# size from copies of the six stores.
load_base() {
  local dir=$WORK/base-$T
  mkdir -p "$dir" "$OUT/t$T"
  start_cluster "$dir" "$dir" 0
  local t=$SECONDS targets
  targets="resp://$(for k in $(seq $NODES); do resp "$k"; done | paste -sd,)"
  "$KURA" bench load -w a --target "$targets" --records "$RECORDS" --threads 32 --seed 42 --consistency QUORUM \
    --progress none --plots=false --label "load-t$T" --out "$OUT/t$T/load" | sed -n 1,2p
  echo "loaded $RECORDS records with $T token(s) per node in $((SECONDS - t)) s; $(du -sm "$dir/n1" | cut -f1) MB in node 1's directory"
  stop_nodes
  local copies=()
  for k in $(seq $NODES); do
    cp -a "$dir/n$k/lsm" "$WORK/sizes-n$k"
    copies+=("$WORK/sizes-n$k")
  done
  "$HELPER" rowsizes -out "$OUT/t$T/rowsizes.bin" "${copies[@]}" | tee "$OUT/t$T/rowsizes.txt"
  rm -rf "${copies[@]}"
}

# run_once KIND LIMIT DIR: one run from a fresh copy; non-zero if a node did not start or
# the recovery did not finish.
run_once() {
  local kind=$1 limit=$2 r=$3
  rm -rf "$r" "$WORK/run"
  mkdir -p "$r/logs" "$WORK/run"
  for k in $(seq $NODES); do cp -a "$WORK/base-$T/n$k" "$WORK/run/"; done
  start_cluster "$WORK/run" "$r/logs" 1 || return 1
  for k in $(seq $NODES); do "$KURA" admin stream-limit "$limit" --admin "$(admin "$k")" >/dev/null; done
  local ids=() k
  for k in $(seq $NODES); do ids[$k]=$(node_id "$r/logs/n$k.log"); done
  curl -sf "http://$(admin 1)/cluster" >"$r/cluster-start.json"
  # The victim: VICTIM, or 5 when VICTIM leads the metadata log (killing the leader would
  # add an election to the time before the removal, not to the recovery).
  VIC=${VICTIM:-6}
  if [ "$(jq -r .topology.leader "$r/cluster-start.json")" = "${ids[$VIC]}" ] && [ -z "${VICTIM:-}" ]; then VIC=5; fi
  if [ -z "$SAT" ]; then
    "$KURA" bench run -w a --target "resp://$(survivors)" --records "$RECORDS" --threads 32 --consistency QUORUM \
      -p requestdistribution=uniform --seed 9 --duration "${SAT_S}s" --progress none --plots=false \
      --label saturation --out "$OUT/t$T/saturation" | sed -n 1,3p
    SAT=$(jq -r .throughput_ops "$OUT/t$T/saturation/result.json")
    RATE=$(awk -v s="$SAT" -v f="$LOAD_SHARE" 'BEGIN {printf "%.1f", s * f}')
    echo "t$T: saturation $SAT ops/s; the foreground load runs at $RATE ops/s"
  fi
  "$HELPER" timeline -admins "$(all_admins)" -out "$r/timeline.jsonl" &
  TIMELINE=$!
  "$HELPER" load -targets "$(survivors)" -records "$RECORDS" -rate "$RATE" -out "$r/ops.log" >"$r/load.txt" 2>&1 &
  LOADER=$!
  if [ "${PROFILE:-0}" = 1 ]; then
    # A CPU profile of every node over the before window's last 10 s.
    (sleep $((BEFORE_S - 7)); for k in "${!PIDS[@]}"; do curl -sf -m 30 "http://$(admin "$k")/debug/pprof/profile?seconds=10" >"$r/cpu-before-n$k.pprof" & done; wait) &
  fi
  sleep $((BEFORE_S + 3))
  local uptime_before voter t_kill t_remove="" t_settled t_stop epoch="" out
  uptime_before=$(uptime)
  curl -sf "http://$(admin 1)/cluster" >"$r/cluster-before.json"
  voter=$(jq -r --arg id "${ids[$VIC]}" '[.topology.voters[] | select(. == $id)] | length' "$r/cluster-before.json")
  scrape "$r/metrics-before-$VIC.txt" "$VIC"
  t_kill=$(date +%s%N)
  kill -KILL "${PIDS[$VIC]}"
  wait "${PIDS[$VIC]}" 2>/dev/null || true
  unset "PIDS[$VIC]"
  # removenode is refused until the survivors' failure detector holds the victim down.
  for _ in $(seq 240); do
    for k in "${!PIDS[@]}"; do scrape "$r/metrics-before-$k.txt" "$k"; done
    t_remove=$(date +%s%N)
    if out=$("$KURA" admin removenode "${ids[$VIC]}" --admin "$(admin 1)" 2>&1); then
      echo "$out" >"$r/removenode.txt"
      if [ "${PROFILE:-0}" = 1 ]; then
        # And over the recovery's first 15 s.
        for k in "${!PIDS[@]}"; do curl -sf -m 40 "http://$(admin "$k")/debug/pprof/profile?seconds=15" >"$r/cpu-during-n$k.pprof" & done
      fi
      epoch=$(sed -n 's/.*started at epoch \([0-9]*\).*/\1/p' <<<"$out")
      break
    fi
    echo "$(date +%s%N) $out" >>"$r/removenode-refused.txt"
    t_remove=""
    sleep 0.5
  done
  [ -n "$t_remove" ] || { echo "removenode never accepted: $(tail -n 1 "$r/removenode-refused.txt")" >&2; return 1; }
  if ! wait_settled $((NODES - 1)) "$RECOVERY_TIMEOUT"; then
    # What each survivor says of the change that did not finish, for the report.
    for k in "${!PIDS[@]}"; do curl -sf -m 5 "http://$(admin "$k")/cluster" >"$r/cluster-stuck-$k.json" || true; done
    cp "$WORK/run/n1/meta/meta.state" "$r/meta-n1.state" 2>/dev/null || true
    "$HELPER" stuck "$r/meta-n1.state" >"$r/stuck.txt" 2>&1 || true
    echo "the recovery did not finish in $RECOVERY_TIMEOUT s:" >&2
    cat "$r/stuck.txt" >&2
    return 2
  fi
  t_settled=$(date +%s%N)
  if [ "${PROFILE:-0}" = 1 ]; then
    for k in "${!PIDS[@]}"; do curl -sf -m 10 "http://$(admin "$k")/debug/store" >"$r/store-after-n$k.txt" || true; done
  fi
  for k in "${!PIDS[@]}"; do scrape "$r/metrics-after-$k.txt" "$k"; done
  curl -sf "http://$(admin 1)/cluster" >"$r/cluster-after.json"
  sleep "$AFTER_S"
  t_stop=$(date +%s%N)
  kill -INT "$LOADER"
  wait "$LOADER" || true
  LOADER=""
  kill "$TIMELINE" 2>/dev/null || true
  wait "$TIMELINE" 2>/dev/null || true
  TIMELINE=""
  cat "$r/load.txt"
  "$HELPER" verify -targets "$(survivors)" -records "$RECORDS" -ops "$r/ops.log" -out "$r/verify.json"
  local uptime_after
  uptime_after=$(uptime)
  stop_nodes
  cat >"$r/run.env" <<EOF
kind=$kind
tokens=$T
records=$RECORDS
limit=$limit
unthrottled_bps=${UNTHROTTLED:-0}
sizes=$(cd "$OUT" && pwd)/t$T/rowsizes.bin
victim_store_bytes=$(awk -v k="n$VIC" '$1 == "store" && index($2, "sizes-" k) {print $4}' "$OUT/t$T/rowsizes.txt")
mem_cap=$MEM_CAP
saturation_ops=$SAT
rate_ops=$RATE
victim=$VIC
victim_id=${ids[$VIC]}
victim_voter=$voter
removal_epoch=$epoch
before_s=$BEFORE_S
t_kill_ns=$t_kill
t_remove_ns=$t_remove
t_settled_ns=$t_settled
t_stop_ns=$t_stop
uptime=$uptime_before
uptime_after=$uptime_after
EOF
  "$HELPER" analyze "$r"
}

# run_case KIND LIMIT NAME: a run, tried again once if it fails (a port taken by another
# program on this shared machine, say).
run_case() {
  local r=$OUT/runs/$3
  local rc
  for try in 1 2; do
    rc=0
    run_once "$1" "$2" "$r" || rc=$?
    if [ "$rc" = 0 ]; then
      jq -r --arg n "$3" '"\($n): recovery \(.recovery_s | . * 10 | round / 10) s, " + (if .limit > 0 then "bound \(.bound_s | . * 10 | round / 10) s (\(.bound_kind)), ratio \(.ratio | . * 1000 | round / 1000)" else "no limit: a node peaked at \(.rates.peak_bps / 1e6 | . * 100 | round / 100) MB/s" end) + ", moved \(.sent_bytes) B for \(.lost_bytes) B lost; p99 during/before reads \(.latency.read_p99_ratio | . * 100 | round / 100), writes \(.latency.write_p99_ratio | . * 100 | round / 100); missing \(.verify.missing + .verify.stale) of \(.verify.keys)"' "$r/row.json"
      return 0
    fi
    [ -z "$LOADER" ] || { kill -INT "$LOADER" 2>/dev/null || true; wait "$LOADER" 2>/dev/null || true; LOADER=""; }
    [ -z "$TIMELINE" ] || { kill "$TIMELINE" 2>/dev/null || true; wait "$TIMELINE" 2>/dev/null || true; TIMELINE=""; }
    stop_nodes
    echo "$3: try $try failed (logs in $r/logs)"
    # A recovery that does not finish is kura's, not the machine's: it is not tried again.
    [ "$rc" != 2 ] || break
    [ "$try" = 2 ] || { rm -rf "$r.failed-$try"; mv "$r" "$r.failed-$try"; }
  done
  touch "$r/failed"
  return 1
}

rm -rf "$OUT"
mkdir -p "$OUT/runs"
echo "# $(date -u +%FT%TZ) nproc=$(nproc) $(uptime) records=$RECORDS tokens=\"$TOKENS\" mem_cap=$MEM_CAP stream_limit=${STREAM_LIMIT:-auto} limit_fraction=$LIMIT_FRACTION load_share=$LOAD_SHARE sat_s=$SAT_S before_s=$BEFORE_S runs=$RUNS quick=${QUICK:-0} tree=$(git rev-parse --short HEAD 2>/dev/null || echo '?') kura_bin=${KURA_BIN:-built from the tree}" | tee "$OUT/conditions.txt"
for T in $TOKENS; do
  SAT="" RATE="" UNTHROTTLED=""
  load_base
  if [ "$CALIBRATE" = 1 ]; then
    run_case unthrottled 0 "${LABEL}t$T-unthrottled" || true
    # What a node streams unthrottled: the rate every node streamed at in the same
    # recovery with no limit (the bound's bytes over its time). One node's highest 1-s
    # rate is about twice that, and half of it did not bind: the 2 cores, shared by all
    # five nodes streaming at once, were the bottleneck (docs/bench/recover.md).
    [ ! -f "$OUT/runs/${LABEL}t$T-unthrottled/row.json" ] || UNTHROTTLED=$(jq -r .effective_bps "$OUT/runs/${LABEL}t$T-unthrottled/row.json")
  fi
  LIMIT=${STREAM_LIMIT:-}
  if [ -z "$LIMIT" ]; then
    [ -n "$UNTHROTTLED" ] || { echo "t$T: no STREAM_LIMIT and no calibration: no limited run" >&2; continue; }
    LIMIT=$(awk -v u="$UNTHROTTLED" -v f="$LIMIT_FRACTION" 'BEGIN {x = u * f; printf "%d", (x == int(x)) ? x : int(x) + 1}')
  fi
  echo "t$T: unthrottled ${UNTHROTTLED:-?} B/s (the rate every node streamed at with no limit); stream limit $LIMIT B/s" | tee -a "$OUT/conditions.txt"
  for i in $(seq "$RUNS"); do run_case limited "$LIMIT" "${LABEL}t$T-limited-$i" || true; done
done
echo "# done $(date -u +%FT%TZ) $(uptime)" | tee -a "$OUT/conditions.txt"
mkdir -p "$(dirname "$REPORT")"
"$HELPER" report -out "$REPORT" "$OUT"
echo "report: $REPORT"
