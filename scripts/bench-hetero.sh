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
# must be one both clusters sustain), PHASES ("throughput latency"; "warm" runs WARM_OPS
# (40000) read-only operations in a closed loop, unmeasured, so that every cluster's
# caches have seen the same reads before the phases after it, however fast it is; a
# throughput phase warms a faster cluster more), WORKLOADS (the
# papers' four: "write-only write-heavy read-heavy read-only"), BASE_PORT (27380),
# RECORD (string: each record one string value, written blind with SET as Cassandra's
# inserts were in the paper, and updates write all fields; hash: HSET, which reads the key
# before it writes, so that every write also costs a QUORUM read),
# ROUTE (node: each client thread sends everything to one node, threads spread over the
# nodes; token: each operation goes to the node of the replica engine-aware routing asks
# first, from the cluster's layout, as token-aware drivers send it),
# CLUSTERS ("homogeneous heterogeneous"; add "load-aware" for the heterogeneous cluster
# with load-aware routing, which reuses the heterogeneous cluster's data),
# SERVER_FLAGS (extra flags for every node; HOMO_FLAGS and HETERO_FLAGS add flags for one
# cluster's nodes only), NODE_WRAPPER (a command every node runs under, e.g.
# "scripts/emulate-disks.sh run --disk hdd{host} --memory 256M --" for the emulated HDDs;
# see docs/design/emulated-disks.md; HOMO_WRAPPER and HETERO_WRAPPER replace it for one
# cluster), HOMO_LIMITS and HETERO_LIMITS (memory limits per engine, "lsm=384M", set with
# `emulate-disks.sh limit` once the records are loaded, after which the page cache is
# dropped: the wrappers' own limit can leave room to load quickly, since a B+tree loading
# random keys under a tight limit on an emulated HDD takes hours; "@GROUP=SIZE" limits
# instead the emulate-disks.sh group GROUP, {host} standing for each host's number, whose
# nodes then share that memory as one machine's processes do), REUSE_DATA (set: keep
# the data directories of an earlier run, and skip the load of a cluster that finished
# loading there; a failed run keeps its data), MEMORY_NODE_WRAPPER (the same for in-memory
# nodes only, which need room for their whole share), BTREE_NODE_WRAPPER (the same for the
# heterogeneous cluster's btree nodes only, e.g. a larger GOMEMLIMIT for a row cache,
# --btree-row-cache-bytes) and DATA_ROOT (where the nodes' data directories go, e.g.
# /mnt/kura-hdd{host}; default a temporary directory). {host} in the wrappers and
# DATA_ROOT stands for the host's number (kura dev --data-dir). Client connections are
# spread over every node of the cluster. RSS of every node is sampled in the middle of
# each run, and the engines' I/O counters (/proc/PID/io) around each run (io.txt), and
# on disks with emulate-disks.sh's seek model, each disk's counts (disks.txt), and the
# coordinators' replica requests by role and fallbacks (metrics.txt), and every 10 s of a
# run each coordinator's read latency of each replica (replica-latency.txt). After loading,
# the script waits up to HINT_DRAIN seconds (1800) for the hints (deferred asynchronous
# writes among them) to drain, and logs the hints pending before each run (hints.txt).
# REPEAT (set, N): run the clusters side by side instead of one after the other: all are
# started and loaded first (each on its own ports, BASE_PORT + 100 per cluster, and with
# its own data, load-aware included), then each workload runs N times on each cluster in
# turn, so that the machine's drift (a shared VM's neighbours) falls on every cluster
# alike (before each run the other clusters are given up to 120 s to replay their hints,
# which would take the measured one's CPU); results go to OUT/CLUSTER-PHASE-WORKLOAD-rK,
# and ratios.txt gives every repetition's throughput ratio to the homogeneous cluster. Meant for the page cache: on
# emulated disks the idle clusters' background work would share the measured one's disks.
# REBUILD (set) first has the B+tree nodes of a mixed cluster refill from their peers
# (kura admin rebuild), which is far faster on slow disks than replaying the deferred
# writes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/hetero}
RECORDS=${RECORDS:-100000}
THREADS=${THREADS:-40}
RUN=${RUN:-20s}
WARMUP=${WARMUP:-30s}
HINT_DRAIN=${HINT_DRAIN:-1800}
RATE=${RATE:-1000}
PHASES=${PHASES:-throughput latency}
WARM_OPS=${WARM_OPS:-40000}
CLUSTERS=${CLUSTERS:-homogeneous heterogeneous}
RECORD=${RECORD:-string}
ROUTE=${ROUTE:-node}
RECORD_PROPS=()
[ "$RECORD" = string ] && RECORD_PROPS=(-p writeallfields=true)
BASE=${BASE_PORT:-27380}
WORK=$(mktemp -d /tmp/kura-hetero.XXXXXX)
DATA=${DATA_ROOT:-$WORK}/kura-hetero-data
HOSTS=3
declare -A DEV_PIDS=() NODE_PIDS=() TARGETS=()

# dev_flags CLUSTER prints kura dev's flags for one cluster, one per line.
dev_flags() {
  local flag wrapper=${NODE_WRAPPER:-} own
  for flag in ${SERVER_FLAGS:-}; do echo "--server-flag=$flag"; done
  if [ "$1" = homogeneous ]; then own=${HOMO_FLAGS:-}; wrapper=${HOMO_WRAPPER:-$wrapper}
  else own=${HETERO_FLAGS:-}; wrapper=${HETERO_WRAPPER:-$wrapper}; fi
  for flag in $own; do echo "--server-flag=$flag"; done
  [ "$1" = load-aware ] && echo "--server-flag=--routing=load-aware"
  [ -n "$wrapper" ] && echo "--node-wrapper=$wrapper"
  [ -n "${MEMORY_NODE_WRAPPER:-}" ] && echo "--node-wrapper=memory=$MEMORY_NODE_WRAPPER"
  [ "$1" != homogeneous ] && [ -n "${BTREE_NODE_WRAPPER:-}" ] && echo "--node-wrapper=btree=$BTREE_NODE_WRAPPER"
  return 0
}

# remove_data deletes every host's data directory, and gives the freed blocks of an
# emulated disk back to its image file, which would otherwise keep growing until the disk
# holding it is full.
remove_data() {
  local h dir
  for h in $(seq "$HOSTS"); do
    dir=${DATA//\{host\}/$h}
    rm -rf "$dir"
    fstrim "$(findmnt -n -o TARGET -T "$(dirname "$dir")")" 2>/dev/null || true
  done
}

# save_logs: copies every node's log (warnings such as pebble's write stalls) to OUT/logs,
# named HOST-LAYOUT-NODE.log, before the data directories go.
save_logs() {
  local h dir f layout
  for h in $(seq "$HOSTS"); do
    dir=${DATA//\{host\}/$h}
    for f in "$dir"/*/*.log; do
      [ -e "$f" ] || continue
      layout=$(basename "$(dirname "$f")")
      mkdir -p "$OUT/logs"
      cp "$f" "$OUT/logs/host$h-$layout-$(basename "$f")"
    done
  done
}

# io_sample CLUSTER LABEL: read and written bytes of every node's process tree, from
# /proc/PID/io.
io_sample() {
  local p c r w
  for p in ${NODE_PIDS[$1]}; do
    r=0 w=0
    for c in $p $(pgrep -P "$p"); do
      r=$((r + $(awk '/^read_bytes/ {print $2}' "/proc/$c/io" 2>/dev/null || echo 0)))
      w=$((w + $(awk '/^write_bytes/ {print $2}' "/proc/$c/io" 2>/dev/null || echo 0)))
    done
    echo "$2 pid $p read_bytes $r write_bytes $w"
  done
}
# disk_sample LABEL: the counts of every emulated disk under the seek model
# (emulate-disks.sh with KURA_EMU_MODEL=seek writes them every second).
disk_sample() {
  local f
  for f in "${KURA_EMU_STATE_DIR:-/var/tmp/kura-disks}"/*.diskstats; do
    [ -e "$f" ] || continue
    echo "$1 disk $(basename "$f" .diskstats) $(cat "$f")"
  done
}
# coord_sample CLUSTER LABEL: the replica requests its coordinators sent, by method and
# role, the fallbacks they took and their late reads past the retry budget (denied, or
# sent to quick spares), and the B+tree write buffers' flushes and write stalls, summed
# over the cluster's nodes (metrics.txt), so that a run shows where its reads and writes
# went.
coord_sample() {
  local a
  while read -r a; do curl -s --max-time 5 "http://$a/metrics"; done < <(admin_addrs "$1") |
    awk -v l="$2" '/^kura_coordinator_(replica_requests|fallbacks|read_retries_[a-z_]+)_total/ || /^kura_engine_write_(stall_seconds|buffer_flushes)_total/ || /^kura_(replica|coordinator)_request_seconds_(sum|count)/ { s[$1] += $2 }
      END { for (k in s) if (s[k] > 0) printf "%s %s %.12g\n", l, k, s[k] }' | sort
}
# cpu_sample CLUSTER LABEL: CPU time (user + system clock ticks, /proc/PID/stat) of every
# node's process tree, by node name, and the whole machine's busy ticks and context
# switches (/proc/stat: the client's and everything else's too), so that a run's CPU per
# operation can be split by role (cpu.txt, summed up in cpu-per-op.txt at the end).
cpu_sample() {
  local name pid c t
  while read -r name pid; do
    t=0
    for c in $pid $(pgrep -P "$pid"); do
      t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$2 node $name ticks $t"
  done < <(awk '/ pid [0-9]+$/ { print $1, $NF }' "$WORK/$1.out")
  echo "$2 machine all ticks $(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)"
  echo "$2 machine all ctxt $(awk '/^ctxt / {print $2}' /proc/stat)"
}
# latency_sample CLUSTER LABEL: each coordinator's recent read latency of each replica
# (load-aware routing's kura_coordinator_replica_read_seconds), one line per pair:
# LABEL TIME COORDINATOR-ADMIN REPLICA MILLISECONDS (replica-latency.txt).
latency_sample() {
  local a t
  t=$(date -u +%T)
  while read -r a; do
    curl -s --max-time 5 "http://$a/metrics" |
      awk -v l="$2" -v t="$t" -v a="$a" -F'[{}" ]+' '/^kura_coordinator_replica_read_seconds\{/ { printf "%s %s %s %s %.2f\n", l, t, a, $3, $NF * 1000 }'
  done < <(admin_addrs "$1")
}
# stop_clusters: stops every cluster started.
stop_clusters() {
  local c
  for c in "${!DEV_PIDS[@]}"; do kill -INT "${DEV_PIDS[$c]}" 2>/dev/null || true; done
  for c in "${!DEV_PIDS[@]}"; do wait "${DEV_PIDS[$c]}" 2>/dev/null || true; done
  DEV_PIDS=()
}
cleanup() {
  local rc=$?
  # A client of ours still running (the script was interrupted) would go on loading or
  # running against the next cluster started on the same ports.
  pkill -f "^$WORK/kura bench" 2>/dev/null || true
  stop_clusters
  save_logs
  # A failed run keeps its data (a heterogeneous load on emulated HDDs takes most of an hour).
  if [ "$rc" -ne 0 ] || [ -n "${FAILED:-}" ]; then
    echo "kept the data in ${DATA_ROOT:-$WORK} and $WORK" >&2
  else
    remove_data
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
# An interrupted run is a failed one: its data is kept (without this the EXIT trap saw
# the status of the last command, 0, and removed it).
trap 'FAILED=1; exit 130' INT TERM

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
rm -rf "$OUT"
[ -n "${REUSE_DATA:-}" ] || remove_data
mkdir -p "$OUT"
{
  echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS record=$RECORD threads=$THREADS run=$RUN warmup=$WARMUP rate=$RATE route=$ROUTE phases=\"$PHASES\" clusters=\"$CLUSTERS\""
  for cluster in $CLUSTERS; do echo "# $cluster: kura dev $(dev_flags "$cluster" | tr '\n' ' ')"; done
} | tee "$OUT/conditions.txt"

# start_cluster CLUSTER ENGINES LAYOUT BASE: starts kura dev with its first RESP port at
# BASE, and records its pids and target.
start_cluster() {
  local flags
  mapfile -t flags < <(dev_flags "$1")
  "$KURA" dev --hosts "$HOSTS" --engines "$2" --data-dir "$DATA/$3" --base-port "$4" "${flags[@]}" >"$WORK/$1.out" 2>&1 &
  DEV_PIDS[$1]=$!
  for _ in $(seq 240); do grep -q "Ctrl-C stops" "$WORK/$1.out" && break; sleep 0.5; done
  grep -q "Ctrl-C stops" "$WORK/$1.out" || { FAILED=1; cat "$WORK/$1.out" >&2; exit 1; }
  NODE_PIDS[$1]=$(grep -o 'pid [0-9]*' "$WORK/$1.out" | awk '{print $2}')
  local nodes
  nodes=$(echo "${NODE_PIDS[$1]}" | wc -w)
  TARGETS[$1]="resp://$(for i in $(seq 0 $((nodes - 1))); do printf '127.0.0.1:%d,' $(($4 + i)); done | sed 's/,$//')?record=$RECORD&route=$ROUTE"
}

# common CLUSTER: the client flags every phase against CLUSTER uses, one per line.
common() {
  printf '%s\n' --target "${TARGETS[$1]}" "${RECORD_PROPS[@]}" --records "$RECORDS" --threads "$THREADS" --progress none --seed 42
}

# admin_addrs CLUSTER [ENGINE]: the admin address of every node of the cluster, or of its
# ENGINE nodes, from kura dev's listing.
admin_addrs() {
  awk -v e="${2:+-$2}" '/ pid [0-9]+$/ && $1 ~ e"$" { for (i = 1; i < NF; i++) if ($i == "admin") print $(i + 1) }' "$WORK/$1.out"
}

# hints_pending CLUSTER: hints held for replicas, summed over every node's metrics
# (asynchronous writes to read-optimized replicas deferred by their paces, and writes
# for replicas that were down or late).
hints_pending() {
  local a total=0 n
  while read -r a; do
    n=$(curl -s --max-time 5 "http://$a/metrics" | awk '/^kura_hints_pending / {printf "%d", $2}')
    total=$((total + ${n:-0}))
  done < <(admin_addrs "$1")
  echo "$total"
}

# rebuild_btrees CLUSTER: after a load whose asynchronous writes to the B+tree nodes were
# mostly deferred to hints (slow disks), has each B+tree node refill from its peers in key
# order (kura admin rebuild) and waits until none is refilling, up to HINT_DRAIN seconds.
rebuild_btrees() {
  local start=$SECONDS a any
  while read -r a; do "$KURA" admin rebuild --admin "$a" >/dev/null; done < <(admin_addrs "$1" btree)
  while :; do
    any=0
    while read -r a; do
      curl -s --max-time 5 "http://$a/cluster" | grep -q '"refilling":true' && any=1
    done < <(admin_addrs "$1" btree)
    [ "$any" -eq 0 ] && break
    if [ $((SECONDS - start)) -ge "$HINT_DRAIN" ]; then
      echo "# $1: WARNING: B+tree nodes still rebuilding ${HINT_DRAIN}s after the load" | tee -a "$OUT/conditions.txt"
      break
    fi
    sleep 5
  done
  echo "# $1: B+tree nodes rebuilt from their peers in $((SECONDS - start)) s" | tee -a "$OUT/conditions.txt"
}

# drain_hints CLUSTER: waits, up to HINT_DRAIN (seconds) from its call, until no node
# holds hints, so that every replica has the loaded records before measuring; logs the
# progress.
drain_hints() {
  local start=$SECONDS n
  while :; do
    n=$(hints_pending "$1")
    echo "$1 $(date -u +%FT%TZ) waited_s $((SECONDS - start)) hints_pending $n" >>"$OUT/hints.txt"
    [ "$n" -eq 0 ] && break
    if [ $((SECONDS - start)) -ge "$HINT_DRAIN" ]; then
      echo "# $1: WARNING: $n hints still pending after ${HINT_DRAIN}s of waiting" | tee -a "$OUT/conditions.txt"
      break
    fi
    sleep 10
  done
  echo "# $1: hints drained (or given up) after $((SECONDS - start)) s of waiting" | tee -a "$OUT/conditions.txt"
}

# apply_limits CLUSTER: sets each node's memory limit from HOMO_LIMITS or HETERO_LIMITS
# ("ENGINE=SIZE ..."), after writing back and dropping the page cache, so that measuring
# starts cold. A limit below what a node's own memory (not its cache) already takes cannot
# be set: the node then keeps its wrapper's limit, and conditions.txt says so.
apply_limits() {
  local limits=${HETERO_LIMITS:-} l engine size pid h g
  [ "$1" = homogeneous ] && limits=${HOMO_LIMITS:-}
  [ -n "$limits" ] || return 0
  sync
  echo 3 >/proc/sys/vm/drop_caches || echo "warning: cannot drop the page cache" >&2
  for l in $limits; do
    engine=${l%%=*} size=${l#*=}
    if [[ $engine == @* ]]; then
      for h in $(seq "$HOSTS"); do
        g=${engine#@} && g=${g//\{host\}/$h}
        scripts/emulate-disks.sh limit --memory "$size" --group "$g" ||
          echo "# $1: WARNING: could not limit group $g to $size" | tee -a "$OUT/conditions.txt"
      done
      continue
    fi
    while read -r pid; do
      if ! scripts/emulate-disks.sh limit --memory "$size" "$pid"; then
        echo "# $1: WARNING: could not limit the $engine node (wrapper pid $pid, RSS $(( $(tree_rss "$pid") / 1024 )) MiB) to $size" | tee -a "$OUT/conditions.txt"
      fi
    done < <(awk -v e="-$engine" '$1 ~ e"$" { for (i = 1; i < NF; i++) if ($i == "pid") print $(i + 1) }' "$WORK/$1.out")
  done
  echo "# $1: memory limits $limits, page cache dropped at $(date -u +%FT%TZ); RSS MiB per node: $(for p in ${NODE_PIDS[$1]}; do printf '%s ' $(( $(tree_rss "$p") / 1024 )); done)" | tee -a "$OUT/conditions.txt"
}

# prepare CLUSTER BASE: starts the cluster, loads it unless its data was loaded before,
# and waits for its replicas to be complete.
prepare() {
  local engines=lsm,btree,memory layout=heterogeneous marker c
  [ "$1" = homogeneous ] && engines=lsm layout=homogeneous
  [ -n "${REPEAT:-}" ] && layout=$1 # side by side, load-aware cannot share the heterogeneous data
  start_cluster "$1" "$engines" "$layout" "$2"
  mapfile -t c < <(common "$1")
  marker=${DATA//\{host\}/1}/$layout.loaded
  if [ ! -e "$marker" ]; then # load-aware run after heterogeneous reuses its data
    "$KURA" bench load -w read-heavy "${c[@]}" --label "$1" --out "$OUT/$1-load" --plots=false | sed -n '1p; /^  [0-9]* errors: /p'
    touch "$marker"
  fi
  [ -n "${REBUILD:-}" ] && [ "$1" != homogeneous ] && rebuild_btrees "$1"
  drain_hints "$1"
  apply_limits "$1"
}

# settle CLUSTER: side by side, waits (up to 120 s) until the other clusters hold no hints,
# so that their catching up does not take the measured cluster's CPU; the measured
# cluster's own backlog stays, as one after the other.
settle() {
  local c start=$SECONDS
  for c in "${!DEV_PIDS[@]}"; do
    [ "$c" = "$1" ] && continue
    while [ "$(hints_pending "$c")" -ne 0 ] && [ $((SECONDS - start)) -lt 120 ]; do sleep 2; done
  done
  [ $((SECONDS - start)) -lt 120 ] || echo "# WARNING: the other clusters still held hints when $1 was measured" | tee -a "$OUT/conditions.txt"
}

# measure CLUSTER PHASE WORKLOAD DIR: one measured run, into OUT/DIR.
measure() {
  local extra=() c sampler latencies cpus limits=(--duration "$RUN" --warmup "$WARMUP")
  [ "$2" = latency ] && extra=(--rate "$RATE")
  [ "$2" = warm ] && limits=(--operations "$WARM_OPS" --warmup 0s)
  settle "$1"
  mapfile -t c < <(common "$1")
  ( sleep $(( ${WARMUP%s} + ${RUN%s} / 2 )); for p in ${NODE_PIDS[$1]}; do echo "$4 pid $p rss_mib $(( $(tree_rss "$p") / 1024 ))"; done >>"$OUT/rss.txt" ) &
  sampler=$!
  ( sleep "${WARMUP%s}"; while :; do latency_sample "$1" "$4" >>"$OUT/replica-latency.txt"; sleep 10; done ) &
  latencies=$!
  # The CPU samples bracket the measured window (after the warm-up), in the background so
  # that the client's start and its report after the run fall outside them.
  ( sleep "${WARMUP%s}"; [ "$2" = warm ] && exit 0; cpu_sample "$1" "$4 before" >>"$OUT/cpu.txt"
    sleep "${RUN%s}"; cpu_sample "$1" "$4 after" >>"$OUT/cpu.txt" ) &
  cpus=$!
  io_sample "$1" "$4 before" >>"$OUT/io.txt"
  disk_sample "$4 before" >>"$OUT/disks.txt"
  coord_sample "$1" "$4 before" >>"$OUT/metrics.txt"
  echo "$4 $(date -u +%FT%TZ) before hints_pending $(hints_pending "$1")" >>"$OUT/hints.txt"
  "$KURA" bench run -w "$3" "${c[@]}" ${extra[@]+"${extra[@]}"} --label "$1-$2" "${limits[@]}" \
    --out "$OUT/$4" | sed -n '1p; /^  [0-9]* errors: /p'
  io_sample "$1" "$4 after" >>"$OUT/io.txt"
  disk_sample "$4 after" >>"$OUT/disks.txt"
  coord_sample "$1" "$4 after" >>"$OUT/metrics.txt"
  kill "$latencies" 2>/dev/null || true
  wait "$sampler" "$cpus" # not a bare wait: kura dev is a child too
}

# throughput DIR: the TOTAL row's throughput in OUT/DIR's summary.csv.
throughput() {
  awk -F, '$4 == "TOTAL" { print $(NF - 7) }' "$OUT/$1/summary.csv" 2>/dev/null
}

WORKLOADS=${WORKLOADS:-write-only write-heavy read-heavy read-only}
if [ -z "${REPEAT:-}" ]; then
  for cluster in $CLUSTERS; do
    prepare "$cluster" "$BASE"
    for phase in $PHASES; do
      if [ "$phase" = warm ]; then measure "$cluster" warm read-only "$cluster-warm"; continue; fi
      for w in $WORKLOADS; do measure "$cluster" "$phase" "$w" "$cluster-$phase-$w"; done
    done
    stop_clusters
  done
else
  k=0
  for cluster in $CLUSTERS; do prepare "$cluster" $((BASE + 100 * k)); k=$((k + 1)); done
  for phase in $PHASES; do
    if [ "$phase" = warm ]; then
      for cluster in $CLUSTERS; do measure "$cluster" warm read-only "$cluster-warm"; done
      continue
    fi
    for w in $WORKLOADS; do
      for r in $(seq "$REPEAT"); do
        for cluster in $CLUSTERS; do measure "$cluster" "$phase" "$w" "$cluster-$phase-$w-r$r"; done
      done
    done
  done
  stop_clusters
  # ratios.txt: each repetition's throughput against the homogeneous cluster's in the
  # same repetition.
  for phase in $PHASES; do
    [ "$phase" = warm ] && continue
    for w in $WORKLOADS; do
      for cluster in $CLUSTERS; do
        [ "$cluster" = homogeneous ] && continue
        line="$phase $w $cluster"
        for r in $(seq "$REPEAT"); do
          line+=" $(awk -v a="$(throughput "$cluster-$phase-$w-r$r")" -v b="$(throughput "homogeneous-$phase-$w-r$r")" \
            'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-" }')"
        done
        echo "$line"
      done
    done
  done | tee "$OUT/ratios.txt"
fi
# cpu-per-op.txt: for each measured run, the CPU it took per operation over its measured
# window, in microseconds: the nodes of each role, all nodes, and the whole machine (the
# client and anything else running included), and the machine's context switches per
# operation. With every core busy, throughput follows the machine's figure.
[ -s "$OUT/cpu.txt" ] && awk -v out="$OUT" -v hz="$(getconf CLK_TCK)" '
  $2 == "before" && $5 == "ctxt" { bc[$1] = $6; next }
  $2 == "before" && $5 == "ticks" { b[$1, $4] = $6; next }
  $2 == "after" && $5 == "ctxt" { if ($1 in bc) cs[$1] = $6 - bc[$1]; next }
  $2 == "after" && (($1, $4) in b) {
    role = $4; sub(/^host[0-9]+-/, "", role)
    if ($3 == "machine") role = "machine"
    d[$1, role] += $6 - b[$1, $4]; if (role != "machine") d[$1, "nodes"] += $6 - b[$1, $4]
    runs[$1] = 1; roles[role] = 1; roles["nodes"] = 1
  }
  END {
    for (r in runs) {
      ops = 0; f = out "/" r "/summary.csv"
      while ((getline line < f) > 0) { split(line, c, ","); if (c[4] == "TOTAL") ops = c[5] }
      close(f)
      if (ops == 0) continue
      printf "%s ops %d", r, ops
      for (x in roles) if ((r, x) in d) printf " %s_us %.1f", x, d[r, x] / hz * 1e6 / ops
      if (r in cs) printf " machine_ctxt %.2f", cs[r] / ops
      printf "\n"
    }
  }' "$OUT/cpu.txt" | sort >"$OUT/cpu-per-op.txt"
# disk-reads.txt: on disks with the seek model, for each measured run (warm-up included),
# each disk's reads and the seconds it was busy, and the reads of all disks: how many
# disk reads the cluster's operations cost, and whether one disk held the others back.
[ -s "$OUT/disks.txt" ] && awk '
  { for (i = 5; i <= NF; i++) { split($i, kv, "="); v[$1, $2, $4, kv[1]] = kv[2] }; runs[$1] = 1; disks[$4] = 1 }
  END {
    for (r in runs) {
      line = r; total = 0
      for (d in disks) {
        n = v[r, "after", d, "reads"] - v[r, "before", d, "reads"]; total += n
        line = line sprintf(" %s %d reads %.0f s busy", d, n, v[r, "after", d, "busy_s"] - v[r, "before", d, "busy_s"])
      }
      print line " total_reads " total
    }
  }' "$OUT/disks.txt" | sort >"$OUT/disk-reads.txt"
# service.txt: for each measured run (warm-up included: the samples bracket the client's
# whole run), the average time of a coordinated read and write, and of a replica request
# served, by the serving node's role and method, in milliseconds, from the histograms'
# sums and counts in metrics.txt: where a request's time goes between the coordinator and
# its replicas.
[ -s "$OUT/metrics.txt" ] && awk '
  $3 ~ /_seconds_(sum|count)\{/ {
    k = $3; kind = (k ~ /_sum\{/) ? "sum" : "count"; sub(/_(sum|count)\{/, "{", k)
    if ($2 == "before") b[$1, k, kind] = $4
    else { d[$1, k, kind] = $4 - b[$1, k, kind]; keys[$1, k] = 1; runs[$1] = 1 }
  }
  END {
    for (r in runs) {
      line = r
      for (rk in keys) {
        split(rk, x, SUBSEP); if (x[1] != r) continue
        n = d[r, x[2], "count"]; if (n <= 0) continue
        name = x[2]; gsub(/kura_|_request_seconds|"|method=|role=|op=/, "", name)
        line = line sprintf(" %s %.3f ms (%d)", name, d[r, x[2], "sum"] / n * 1000, n)
      }
      print line
    }
  }' "$OUT/metrics.txt" | sort >"$OUT/service.txt"
# The report compares against the homogeneous cluster: none without it (its runs of
# another OUT can be reported with these by kura bench report).
[[ " $CLUSTERS " == *" homogeneous "* ]] || exit 0
# Side by side, each repetition gets its own report.
suffixes=("")
[ -n "${REPEAT:-}" ] && mapfile -t suffixes < <(seq -f -r%g "$REPEAT")
for phase in $PHASES; do
  [ "$phase" = warm ] && continue
  for suffix in "${suffixes[@]}"; do
    dirs=()
    for w in $WORKLOADS; do
      for cluster in $CLUSTERS; do dirs+=("$OUT/$cluster-$phase-$w$suffix"); done
    done
    "$KURA" bench report "${dirs[@]}" --baseline "homogeneous-$phase" --out "$OUT/report-$phase$suffix" \
      --title "Heterogeneous vs homogeneous cluster ($phase$suffix), RF 3, QUORUM"
  done
done
