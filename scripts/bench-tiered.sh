#!/usr/bin/env bash
# Tiered storage against whole-file placements (seed 001's evaluation, issue 6): one kura
# node with a small emulated SSD and a large emulated HDD, data larger than memory, the
# fast budget a tenth of the data, YCSB's 50/50 read-update mix at zipfian 0.99 and 0.90.
# Configurations, each loaded fresh:
#
#   slow          everything on the HDD
#   free-space    each new sstable on the SSD or the HDD with probability proportional to
#                 free space (Cassandra's rule, the paper's baseline; --lsm-second-dir-policy)
#   lower-levels  pebble's own placement: L5 and L6 on the HDD, the rest and the log on the
#                 SSD (--lsm-second-dir-policy lower-levels)
#   tiered        kura's tiered storage: --fast-dir on the SSD with --fast-budget-bytes
#                 (reads and writes rank rows, the default since 2026-11-25)
#   tiered-reads  the same, ranking rows by reads only (--tier-count-writes=false)
#   tiered-writes the same as tiered, saying --tier-count-writes (as runs before the
#                 default changed did)
#   tiered-cache  the same, the fast tier's share of the caches FAST_CACHE_SHARE (0.1)
#                 instead of a quarter (--tier-fast-cache-share)
#   tiered-uncached  the same, the fast tier's files kept out of the page cache
#                 (--tier-fast-page-cache=false), which then holds the HDD's pages
#   fast          everything on a second, larger SSD (the upper bound)
#   NAME-bs32     configuration NAME with 32 KiB sstable blocks (--lsm-block-size-bytes)
#   NAME-gc25     configuration NAME with the Go collector's GOGC=25 (the heap grows a
#                 quarter past its live data between collections, not twice)
#
# Run as root (loop devices and cgroups); it brings the disks up (hdd 8G, ssd 1G, ssd2 3G,
# or 8G past 1,000,000 records; sparse images under /var/tmp/kura-disks) if they are not,
# and leaves them up. Usage:
#
#   scripts/bench-tiered.sh [OUT]          (default OUT: bench-results/tiered)
#
# Environment: RECORDS (1000000 records of 1 KB, one string value each, written blind),
# THREADS (32), RUN (240s), WARMUP (0s: measured from the first operation, so throughput
# over time shows the tiered node filling its fast tier; a warm-up measures the steady
# state instead), ZIPFS ("0.99 0.9"), CONFIGS (the five above),
# BUDGET (fast budget in bytes; default a tenth of RECORDS x 1,100 bytes), LOAD_MEMORY (2G)
# and RUN_MEMORY (384M: the node's memory limit, page cache included, set after loading
# and dropping the page cache), PARALLEL (set: run the configurations side by side, each
# node on disks of its own, so that the machine's drift falls on all alike: the first on
# hdd, ssd and ssd2, the Kth after it on hdd2K, ssd2K and ssd3K, e.g. hdd21, ssd21,
# ssd31, of the same sizes; loads and runs start together), SLOT_BASE (0: the first slot's
# number, so that a second run beside a running one takes other disks and ports, e.g.
# SLOT_BASE=6), CACHE (64 MiB of lsm block cache; the row cache is off, so that memory
# holds few rows in every configuration), SETTLE_DEBT (0), SETTLE_QUIET (90) and SETTLE_MAX
# (1800): after loading, each node waits until its compaction debt
# (kura_engine_compaction_debt_bytes) is at most SETTLE_DEBT bytes or has not changed for
# SETTLE_QUIET seconds, or SETTLE_MAX seconds, so that every run starts from a store
# its compactions have caught up with (how long a load leaves compactions behind depends
# on how fast it went, which depends on the machine and on how many nodes load at once).
# SKIP_LOAD (set, with PARALLEL and one zipfian constant): run on the data a previous
# invocation with the same CONFIGS, RECORDS and SLOT_BASE loaded and settled, without
# loading again.
#
# As in the paper (seed 001, section 5: the workload starts with all data on the HDD, an
# SSD added to an HDD-only system), free-space and tiered load onto the HDD alone (their
# --data-dir, no second or fast directory) and restart with their SSD before the run;
# slow, lower-levels and fast load as they run. Every node restarts between loading and
# the run. Per run it saves the bench
# result, the device counters of both disks (/sys/block/loopN/stat) around the run, the
# node's /metrics, its store's report (/debug/store, before and after) and, for the tiered nodes, /tiers; every minute of the run it also
# records both disks' read counters (devices.txt) and, for the tiered nodes, the fast
# tier's rows and share of reads (tiers.txt). It ends with `kura bench oracle`'s
# share for the budget, the share a placement learning from each tiered run's requests
# could reach by its end (`--learn`), and `kura bench report` per zipfian constant (ratios
# to free-space when it ran).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/tiered}
SKIP_LOAD=${SKIP_LOAD:-}
RECORDS=${RECORDS:-1000000}
THREADS=${THREADS:-32}
RUN=${RUN:-240s}
WARMUP=${WARMUP:-0s}
ZIPFS=${ZIPFS:-0.99 0.9}
CONFIGS=${CONFIGS:-slow free-space lower-levels tiered fast}
BUDGET=${BUDGET:-$((RECORDS * 110))}
LOAD_MEMORY=${LOAD_MEMORY:-2G}
RUN_MEMORY=${RUN_MEMORY:-384M}
CACHE=${CACHE:-67108864}
SETTLE_DEBT=${SETTLE_DEBT:-0}
SETTLE_MAX=${SETTLE_MAX:-1800}
SETTLE_QUIET=${SETTLE_QUIET:-90}
PARALLEL=${PARALLEL:-}
SLOT_BASE=${SLOT_BASE:-0}
# The all-SSD bound's disk holds every record: 3 GB holds 1,000,000, not 3,000,000.
SSD2_SIZE=${SSD2_SIZE:-$((RECORDS > 1000000 ? 8 : 3))G}
EMU=scripts/emulate-disks.sh
PORT=27480
ADMIN=27481
WORK=$(mktemp -d /tmp/kura-tiered.XXXXXX)
declare -A WRAPPER_PIDS=()

read -ra CONFIG_LIST <<<"$CONFIGS"
SLOTS=1
[ -n "$PARALLEL" ] && SLOTS=${#CONFIG_LIST[@]}

# slot_disks SLOT prints the names of one slot's HDD, SSD and second SSD.
slot_disks() {
  local n=$((SLOT_BASE + $1))
  if [ "$n" -eq 0 ]; then echo "hdd ssd ssd2"; else echo "hdd$((20 + n)) ssd$((20 + n)) ssd$((30 + n))"; fi
}
# use_slot SLOT sets the variables that name one slot's disks, directories and ports.
use_slot() {
  read -r D_HDD D_SSD D_SSD2 <<<"$(slot_disks "$1")"
  HDD=/mnt/kura-$D_HDD/tiered-bench SSD=/mnt/kura-$D_SSD/tiered-bench SSD2=/mnt/kura-$D_SSD2/tiered-bench
  S_PORT=$((PORT + 10 * (SLOT_BASE + $1))) S_ADMIN=$((ADMIN + 10 * (SLOT_BASE + $1)))
}

for ((i = 0; i < SLOTS; i++)); do
  sizes=(8G 1G "$SSD2_SIZE") k=0 # the slot's HDD, SSD and second SSD
  for d in $(slot_disks "$i"); do
    size=${sizes[$k]} k=$((k + 1))
    if ! findmnt -rn --mountpoint "/mnt/kura-$d" >/dev/null; then
      KURA_EMU_DISKS=$d KURA_EMU_SIZE=$size "$EMU" up
    fi
  done
done

# remove_data deletes every slot's files and gives the freed blocks back to the image
# files, which only grow otherwise.
remove_data() {
  local i d
  for ((i = 0; i < SLOTS; i++)); do
    use_slot "$i"
    rm -rf "$HDD" "$SSD" "$SSD2"
    for d in $(slot_disks "$i"); do fstrim "/mnt/kura-$d" 2>/dev/null || true; done
  done
}

# trim_loop gives back to the image files, every minute until killed, the blocks that
# compactions freed on every slot's disks: images only grow otherwise, and at 3,000,000
# rows each grows towards its 8 GB while it holds about 3.5, so that eight or ten nodes
# side by side fill the machine's disk (and then every emulated disk fails its writes).
trim_loop() {
  local i d
  while sleep 60; do
    for ((i = 0; i < SLOTS; i++)); do
      for d in $(slot_disks "$i"); do fstrim "/mnt/kura-$d" 2>/dev/null || true; done
    done
  done
}
TRIMMER=""

stop_nodes() {
  local pid
  for pid in "${WRAPPER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${WRAPPER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  WRAPPER_PIDS=()
}
cleanup() {
  local rc=$?
  # A client of ours still running (the script was interrupted) would go on loading or
  # running against the next node started on the same port.
  pkill -f "^$WORK/kura bench" 2>/dev/null || true
  [ -z "$TRIMMER" ] || kill "$TRIMMER" 2>/dev/null || true
  stop_nodes
  if [ "$rc" -ne 0 ]; then echo "failed; the node's log is in $WORK" >&2; else rm -rf "$WORK"; fi
  remove_data
}
trap cleanup EXIT

# config_flags CONFIG prints the server flags of one configuration, one per line, for the
# slot use_slot chose.
config_flags() {
  case $1 in
  slow) echo "--data-dir=$HDD/data" ;;
  fast) echo "--data-dir=$SSD2/data" ;;
  free-space) printf '%s\n' "--data-dir=$HDD/data" "--lsm-second-dir=$SSD/second" "--lsm-second-dir-policy=free-space" ;;
  lower-levels) printf '%s\n' "--data-dir=$SSD/data" "--lsm-second-dir=$HDD/second" "--lsm-second-dir-policy=lower-levels" ;;
  tiered) printf '%s\n' "--data-dir=$HDD/data" "--fast-dir=$SSD/fast" "--fast-budget-bytes=$BUDGET" ;;
  tiered-writes) config_flags tiered; echo "--tier-count-writes" ;;
  tiered-reads) config_flags tiered; echo "--tier-count-writes=false" ;;
  tiered-cache) config_flags tiered; echo "--tier-fast-cache-share=${FAST_CACHE_SHARE:-0.1}" ;;
  tiered-uncached) config_flags tiered; echo "--tier-fast-page-cache=false" ;;
  *-bs32) config_flags "${1%-bs32}"; echo "--lsm-block-size-bytes=32768" ;;
  *-gc25) config_flags "${1%-gc25}" ;; # and GOGC=25 (start_node)
  *) echo "unknown configuration $1" >&2; return 1 ;;
  esac
}

# load_flags CONFIG prints the server flags a configuration loads with: the placements that
# add an SSD to an HDD store load onto the HDD alone (see the header).
load_flags() {
  case $1 in
  free-space* | tiered*)
    echo "--data-dir=$HDD/data"
    if [[ $1 == *-bs32 ]]; then echo "--lsm-block-size-bytes=32768"; fi
    ;;
  *) config_flags "$1" ;;
  esac
}

# disk_stats LABEL SLOT: the block-layer counters of the slot's three loop devices (reads,
# sectors read, writes, sectors written), named hdd, ssd and ssd2 whatever the slot.
disk_stats() {
  local d dev role roles=(hdd ssd ssd2) k=0
  for d in $(slot_disks "$2"); do
    role=${roles[$k]} k=$((k + 1))
    dev=$(basename "$(findmnt -n -o SOURCE --mountpoint "/mnt/kura-$d")")
    awk -v l="$1" -v d="$role" '{print l, d, "reads", $1, "read_sectors", $3, "writes", $5, "write_sectors", $7}' "/sys/block/$dev/stat"
  done
}

# sample_minutes DIR SLOT: every 60 s until killed, one line per disk read counter to
# DIR/devices.txt, the bytes of each disk's sstables in the page cache to
# DIR/pagecache.txt (fincore) and, when the node is tiered, the fast tier's rows and
# shares of reads (since start, last minute) to DIR/tiers.txt.
sample_minutes() {
  local start=$SECONDS d dev role roles=(hdd ssd) k
  use_slot "$2"
  while sleep 60; do
    k=0
    for d in $D_HDD $D_SSD; do
      role=${roles[$k]} k=$((k + 1))
      dev=$(basename "$(findmnt -n -o SOURCE --mountpoint "/mnt/kura-$d")")
      awk -v s=$((SECONDS - start)) -v d="$role" '{print s, d, "reads", $1}' "/sys/block/$dev/stat" >>"$1/devices.txt"
      find "/mnt/kura-$d/tiered-bench" -name '*.sst' -print0 2>/dev/null |
        xargs -0 -r fincore --bytes --noheadings --output RES 2>/dev/null |
        awk -v s=$((SECONDS - start)) -v d="$role" '{r += $1} END {print s, d, "sst_bytes_in_page_cache", r + 0}' >>"$1/pagecache.txt" ||
        true # a table compacted away under fincore fails the pipeline, which must not end the sampling
    done
    curl -sf "http://127.0.0.1:$S_ADMIN/tiers" 2>/dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)
print(sys.argv[1], "fast_rows", t["tiers"][0]["keys"], "share_since_start", round(t["since_start"]["FastShare"], 4),
      "share_last_minute", round(t["last_minute"]["FastShare"], 4))' $((SECONDS - start)) >>"$1/tiers.txt" 2>/dev/null || true
  done
}

go build -o "$WORK/kura" ./cmd/kura
trim_loop &
TRIMMER=$!
KURA=$WORK/kura
rm -rf "$OUT"
mkdir -p "$OUT"
remove_data
echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS threads=$THREADS run=$RUN warmup=$WARMUP zipfs=\"$ZIPFS\" configs=\"$CONFIGS\" budget=$BUDGET load_memory=$LOAD_MEMORY run_memory=$RUN_MEMORY cache=$CACHE parallel=${PARALLEL:-no}" | tee "$OUT/conditions.txt"

# start_node CONFIG Z SLOT [load] starts one configuration's node on the slot's disks and
# ports, with the flags it loads with when the fourth argument is "load".
start_node() {
  local c=$1 z=$2 flags phase=${4:-run}
  use_slot "$3"
  if [ "$phase" = load ]; then mapfile -t flags < <(load_flags "$c"); else mapfile -t flags < <(config_flags "$c"); fi
  # GOMEMLIMIT keeps the heap that loading grows within what the run's limit allows.
  local goenv=(GOMEMLIMIT=200MiB)
  if [[ $c == *-gc25 ]]; then goenv+=(GOGC=25); fi
  "$EMU" run --disk "$D_HDD" --disk "$D_SSD" --disk "$D_SSD2" --memory "$LOAD_MEMORY" -- env "${goenv[@]}" \
    "$KURA" server --engine lsm --durability periodic --listen "127.0.0.1:$S_PORT" --admin-listen "127.0.0.1:$S_ADMIN" \
    --lsm-cache-size-bytes "$CACHE" --lsm-row-cache-bytes 0 "${flags[@]}" >"$WORK/$c-$z.log" 2>&1 &
  WRAPPER_PIDS[$3]=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$S_ADMIN/healthz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$S_ADMIN/healthz" >/dev/null || { cat "$WORK/$c-$z.log" >&2; exit 1; }
  echo "# $c zipfian $z, $phase: kura server ${flags[*]} (disks $D_HDD $D_SSD $D_SSD2)" | tee -a "$OUT/conditions.txt"
}

# stop_node SLOT stops the slot's node (SIGTERM: a clean shutdown) and waits for it.
stop_node() {
  kill -TERM "${WRAPPER_PIDS[$1]}" 2>/dev/null || true
  wait "${WRAPPER_PIDS[$1]}" 2>/dev/null || true
  unset "WRAPPER_PIDS[$1]"
}

# settle_node CONFIG Z SLOT waits until the slot's node's compactions have caught up with
# the load: its compaction debt (kura_engine_compaction_debt_bytes) is at most SETTLE_DEBT
# bytes, or has not changed for SETTLE_QUIET seconds (pebble has no compaction it wants to
# run: its estimate counts L0's bytes even when L0 is below its trigger), or SETTLE_MAX
# seconds have passed; and says how long it took.
settle_node() {
  local start=$SECONDS since=$SECONDS m debt=unknown last=none amp=unknown
  use_slot "$3"
  while :; do
    m=$(curl -sf "http://127.0.0.1:$S_ADMIN/metrics" || true)
    debt=$(echo "$m" | awk '/^kura_engine_compaction_debt_bytes/ {printf "%.0f", $2}')
    amp=$(echo "$m" | awk '/^kura_engine_read_amplification/ {printf "%.0f", $2}')
    if [ "$debt" != "$last" ]; then last=$debt since=$SECONDS; fi
    if [ -n "$debt" ] && [ "$debt" -le "$SETTLE_DEBT" ]; then break; fi
    if [ -n "$debt" ] && [ $((SECONDS - since)) -ge "$SETTLE_QUIET" ]; then break; fi
    if [ $((SECONDS - start)) -ge "$SETTLE_MAX" ]; then break; fi
    sleep 5
  done
  echo "# $1 zipfian $2: compactions settled for $((SECONDS - start)) s after loading: debt ${debt:-unknown} bytes, read amplification ${amp:-unknown}" | tee -a "$OUT/conditions.txt"
}

# load_node CONFIG Z SLOT loads the records into the slot's node.
load_node() {
  use_slot "$3"
  "$KURA" bench load -w write-heavy --target "resp://127.0.0.1:$S_PORT?record=string" "${COMMON[@]}" --threads 16 --seed 7 \
    --label "$1" --out "$OUT/$1-$2-load" --plots=false | sed -n 1p
}

# limit_node CONFIG SLOT sets the run's memory limit on the slot's node.
limit_node() {
  "$EMU" limit --memory "$RUN_MEMORY" "${WRAPPER_PIDS[$2]}" || { echo "# $1: WARNING: could not set the memory limit" | tee -a "$OUT/conditions.txt"; }
}

# run_node CONFIG Z SLOT runs the measured workload on the slot's node and collects what
# the node and its disks say about the run.
run_node() {
  local c=$1 z=$2 sampler
  use_slot "$3"
  disk_stats "$c $z before" "$3" >>"$OUT/disks.txt"
  mkdir -p "$OUT/$c-$z"
  # The store's own account (pebble's levels and compactions by kind, per tier for the
  # tiered nodes), before and after: what the run's compactions read and wrote, by level.
  curl -sf "http://127.0.0.1:$S_ADMIN/debug/store" >"$OUT/$c-$z/store-before.txt" || true
  sample_minutes "$OUT/$c-$z" "$3" &
  sampler=$!
  "$KURA" bench run -w write-heavy --target "resp://127.0.0.1:$S_PORT?record=string" "${COMMON[@]}" -p zipfianconstant="$z" \
    --threads "$THREADS" --duration "$RUN" --warmup "$WARMUP" --seed 42 --label "$c-$z" --out "$OUT/$c-$z" | sed -n 1p
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  disk_stats "$c $z after" "$3" >>"$OUT/disks.txt"
  curl -sf "http://127.0.0.1:$S_ADMIN/metrics" >"$OUT/$c-$z/metrics.txt" || true
  curl -sf "http://127.0.0.1:$S_ADMIN/debug/store" >"$OUT/$c-$z/store-after.txt" || true
  [[ "$c" == tiered* ]] && { curl -sf "http://127.0.0.1:$S_ADMIN/tiers" >"$OUT/$c-$z/tiers.json" || true; }
  du -sh "$HDD" "$SSD" "$SSD2" 2>/dev/null | sed "s|^|# $c $z du |" >>"$OUT/conditions.txt" || true
}

# drop_caches starts the runs cold: what loading left in the page cache is written back
# and dropped, file by file on this run's disks (posix_fadvise DONTNEED) and from this
# run's nodes' memory cgroups, so that another run beside it (SLOT_BASE) keeps its nodes'
# pages; the whole machine's page cache where neither can. Dropping the cgroups' pages
# alone is not enough once the nodes have restarted after loading: the pages the loading
# process read and wrote stay cached, charged to the cgroup above the one it ran in and
# not to the node's, which then reads them under no memory limit (free-space's node had
# 1.9 GB of its tables cached a minute into a run limited to 384 MiB).
drop_caches() {
  local pid dir dropped=0 i
  sync
  for i in "${!CONFIG_LIST[@]}"; do
    use_slot "$i"
    { find "$HDD" "$SSD" "$SSD2" -type f -print0 2>/dev/null || true; } | python3 -c '
import os, sys
for name in sys.stdin.buffer.read().split(b"\0"):
    if not name:
        continue
    try:
        fd = os.open(name, os.O_RDONLY)
    except OSError:
        continue  # removed since: a compaction
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)'
  done
  for pid in "${WRAPPER_PIDS[@]}"; do
    while read -r dir; do
      if [ -e "$dir/memory.force_empty" ]; then
        echo 0 >"$dir/memory.force_empty" && dropped=1
      elif [ -e "$dir/memory.reclaim" ]; then
        echo 64G >"$dir/memory.reclaim" 2>/dev/null || true # fails once nothing is left to reclaim
        dropped=1
      fi
    done <"${KURA_EMU_STATE_DIR:-/var/tmp/kura-disks}/runs/$pid"
  done
  [ "$dropped" = 1 ] || echo 3 >/proc/sys/vm/drop_caches
}

# at_once STEP Z runs STEP (load_node, settle_node or run_node) for every configuration on its own
# slot, all at once, and waits for them.
at_once() {
  local i pids=()
  for i in "${!CONFIG_LIST[@]}"; do
    "$1" "${CONFIG_LIST[$i]}" "$2" "$i" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}

COMMON=(-p writeallfields=true --records "$RECORDS" --progress none)
for z in $ZIPFS; do
  if [ -n "$PARALLEL" ]; then
    if [ -z "$SKIP_LOAD" ]; then
      remove_data
      for i in "${!CONFIG_LIST[@]}"; do
        start_node "${CONFIG_LIST[$i]}" "$z" "$i" load
      done
      at_once load_node "$z"
      at_once settle_node "$z"
      for i in "${!CONFIG_LIST[@]}"; do stop_node "$i"; done
    fi
    for i in "${!CONFIG_LIST[@]}"; do
      start_node "${CONFIG_LIST[$i]}" "$z" "$i"
    done
    drop_caches
    for i in "${!CONFIG_LIST[@]}"; do limit_node "${CONFIG_LIST[$i]}" "$i"; done
    at_once run_node "$z"
    stop_nodes
  else
    for c in "${CONFIG_LIST[@]}"; do
      remove_data
      start_node "$c" "$z" 0 load
      load_node "$c" "$z" 0
      settle_node "$c" "$z" 0
      stop_node 0
      start_node "$c" "$z" 0
      drop_caches
      limit_node "$c" 0
      run_node "$c" "$z" 0
      stop_nodes
    done
  fi
  dirs=()
  baseline=""
  for c in $CONFIGS; do
    dirs+=("$OUT/$c-$z")
    if [ -z "$baseline" ] || [ "$c" = free-space ]; then baseline=$c-$z; fi
  done
  "$KURA" bench report "${dirs[@]}" --baseline "$baseline" --out "$OUT/report-$z" \
    --title "Tiered storage vs whole-file placements, 50/50 zipfian $z, $RECORDS records, fast budget $BUDGET bytes"
  "$KURA" bench oracle -w write-heavy --records "$RECORDS" -p zipfianconstant="$z" --top $((BUDGET / 1100)) \
    --operations $((RECORDS * 10)) | tee "$OUT/oracle-$z.txt"
  # What a placement learning from the requests could serve at the end of each tiered
  # run, having seen as many operations as it served: no key it has not seen can be on
  # its fast tier yet. Compare with the fast tier's share of the run's last minute.
  for c in $CONFIGS; do
    [[ "$c" == tiered* ]] || continue
    ops=$(sed -n 's/^ *"ops": *\([0-9]*\).*/\1/p' "$OUT/$c-$z/result.json" 2>/dev/null | head -1)
    [ -n "$ops" ] || continue
    "$KURA" bench oracle -w write-heavy --records "$RECORDS" -p zipfianconstant="$z" --top $((BUDGET / 1100)) \
      --operations $((RECORDS * 10)) --learn "$ops" | sed "s/^/$c: /" | tee -a "$OUT/oracle-$z.txt"
    # The oracle with the same budget in bytes: as many rows as the budget holds at the
    # size the node's fast tier measured its rows at (a stored row takes more than the
    # 1,100 bytes assumed above).
    rows=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); print(int(t["budget_bytes"] * t["tiers"][0]["keys"] / t["fast_row_bytes"]))' "$OUT/$c-$z/tiers.json" 2>/dev/null) || continue
    "$KURA" bench oracle -w write-heavy --records "$RECORDS" -p zipfianconstant="$z" --top "$rows" \
      --operations $((RECORDS * 10)) | sed "s/^/$c, rows the budget holds at its row size: /" | tee -a "$OUT/oracle-$z.txt"
  done
done
