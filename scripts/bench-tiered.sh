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
#   tiered-writes the same, counting writes as accesses too (--tier-count-writes)
#   fast          everything on a second, larger SSD (the upper bound)
#
# Run as root (loop devices and cgroups); it brings the disks up (hdd 8G, ssd 1G, ssd2 3G
# sparse images under /var/tmp/kura-disks) if they are not, and leaves them up. Usage:
#
#   scripts/bench-tiered.sh [OUT]          (default OUT: bench-results/tiered)
#
# Environment: RECORDS (1000000 records of 1 KB, one string value each, written blind),
# THREADS (32), RUN (240s), WARMUP (0s: measured from the first operation, so throughput
# over time shows the tiered node filling its fast tier; a warm-up measures the steady
# state instead), ZIPFS ("0.99 0.9"), CONFIGS (the five above),
# BUDGET (fast budget in bytes; default a tenth of RECORDS x 1,100 bytes), LOAD_MEMORY (2G)
# and RUN_MEMORY (384M: the node's memory limit, page cache included, set after loading
# and dropping the page cache), CACHE (64 MiB of lsm block cache; the row cache is off,
# so that memory holds few rows in every configuration). Per run it saves the bench
# result, the device counters of both disks (/sys/block/loopN/stat) around the run, the
# node's /metrics and, for the tiered nodes, /tiers; every minute of the run it also
# records both disks' read counters (devices.txt) and, for the tiered nodes, the fast
# tier's rows and share of reads (tiers.txt). It ends with `kura bench oracle`'s
# share for the budget and `kura bench report` per zipfian constant (ratios to free-space
# when it ran).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/tiered}
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
EMU=scripts/emulate-disks.sh
PORT=27480
ADMIN=27481
WORK=$(mktemp -d /tmp/kura-tiered.XXXXXX)
WRAPPER_PID=""

declare -A SIZES=([hdd]=8G [ssd]=1G [ssd2]=3G)
for d in hdd ssd ssd2; do
  if ! findmnt -rn --mountpoint "/mnt/kura-$d" >/dev/null; then
    KURA_EMU_DISKS=$d KURA_EMU_SIZE=${SIZES[$d]} "$EMU" up
  fi
done
HDD=/mnt/kura-hdd/tiered-bench SSD=/mnt/kura-ssd/tiered-bench SSD2=/mnt/kura-ssd2/tiered-bench

# remove_data deletes every configuration's files and gives the freed blocks back to the
# image files, which only grow otherwise.
remove_data() {
  rm -rf "$HDD" "$SSD" "$SSD2"
  for d in hdd ssd ssd2; do fstrim "/mnt/kura-$d" 2>/dev/null || true; done
}

stop_node() {
  if [ -n "$WRAPPER_PID" ]; then kill -TERM "$WRAPPER_PID" 2>/dev/null || true; wait "$WRAPPER_PID" 2>/dev/null || true; fi
  WRAPPER_PID=""
}
cleanup() {
  local rc=$?
  # A client of ours still running (the script was interrupted) would go on loading or
  # running against the next node started on the same port.
  pkill -f "^$WORK/kura bench" 2>/dev/null || true
  stop_node
  if [ "$rc" -ne 0 ]; then echo "failed; the node's log is in $WORK" >&2; else rm -rf "$WORK"; fi
  remove_data
}
trap cleanup EXIT

# config_flags CONFIG prints the server flags of one configuration, one per line.
config_flags() {
  case $1 in
  slow) echo "--data-dir=$HDD/data" ;;
  fast) echo "--data-dir=$SSD2/data" ;;
  free-space) printf '%s\n' "--data-dir=$HDD/data" "--lsm-second-dir=$SSD/second" "--lsm-second-dir-policy=free-space" ;;
  lower-levels) printf '%s\n' "--data-dir=$SSD/data" "--lsm-second-dir=$HDD/second" "--lsm-second-dir-policy=lower-levels" ;;
  tiered) printf '%s\n' "--data-dir=$HDD/data" "--fast-dir=$SSD/fast" "--fast-budget-bytes=$BUDGET" ;;
  tiered-writes) config_flags tiered; echo "--tier-count-writes" ;;
  *) echo "unknown configuration $1" >&2; return 1 ;;
  esac
}

# disk_stats LABEL: the block-layer counters of the three loop devices (reads, sectors
# read, writes, sectors written).
disk_stats() {
  local d dev
  for d in hdd ssd ssd2; do
    dev=$(basename "$(findmnt -n -o SOURCE --mountpoint "/mnt/kura-$d")")
    awk -v l="$1" -v d="$d" '{print l, d, "reads", $1, "read_sectors", $3, "writes", $5, "write_sectors", $7}' "/sys/block/$dev/stat"
  done
}

# sample_minutes DIR: every 60 s until killed, one line per disk read counter to
# DIR/devices.txt and, when the node is tiered, the fast tier's rows and shares of reads
# (since start, last minute) to DIR/tiers.txt.
sample_minutes() {
  local start=$SECONDS d dev
  while sleep 60; do
    for d in hdd ssd; do
      dev=$(basename "$(findmnt -n -o SOURCE --mountpoint "/mnt/kura-$d")")
      awk -v s=$((SECONDS - start)) -v d="$d" '{print s, d, "reads", $1}' "/sys/block/$dev/stat" >>"$1/devices.txt"
    done
    curl -sf "http://127.0.0.1:$ADMIN/tiers" 2>/dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)
print(sys.argv[1], "fast_rows", t["tiers"][0]["keys"], "share_since_start", round(t["since_start"]["FastShare"], 4),
      "share_last_minute", round(t["last_minute"]["FastShare"], 4))' $((SECONDS - start)) >>"$1/tiers.txt" 2>/dev/null || true
  done
}

go build -o "$WORK/kura" ./cmd/kura
KURA=$WORK/kura
rm -rf "$OUT"
mkdir -p "$OUT"
remove_data
echo "# $(date -u +%FT%TZ) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) records=$RECORDS threads=$THREADS run=$RUN warmup=$WARMUP zipfs=\"$ZIPFS\" configs=\"$CONFIGS\" budget=$BUDGET load_memory=$LOAD_MEMORY run_memory=$RUN_MEMORY cache=$CACHE" | tee "$OUT/conditions.txt"

TARGET="resp://127.0.0.1:$PORT?record=string"
COMMON=(--target "$TARGET" -p writeallfields=true --records "$RECORDS" --progress none)
for z in $ZIPFS; do
  for c in $CONFIGS; do
    remove_data
    mapfile -t flags < <(config_flags "$c")
    # GOMEMLIMIT keeps the heap that loading grows within what the run's limit allows.
    "$EMU" run --disk hdd --disk ssd --disk ssd2 --memory "$LOAD_MEMORY" -- env GOMEMLIMIT=200MiB \
      "$KURA" server --engine lsm --durability periodic --listen "127.0.0.1:$PORT" --admin-listen "127.0.0.1:$ADMIN" \
      --lsm-cache-size-bytes "$CACHE" --lsm-row-cache-bytes 0 "${flags[@]}" >"$WORK/$c-$z.log" 2>&1 &
    WRAPPER_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ADMIN/healthz" >/dev/null && break; sleep 0.2; done
    curl -sf "http://127.0.0.1:$ADMIN/healthz" >/dev/null || { cat "$WORK/$c-$z.log" >&2; exit 1; }
    echo "# $c zipfian $z: kura server ${flags[*]}" | tee -a "$OUT/conditions.txt"
    "$KURA" bench load -w write-heavy "${COMMON[@]}" --threads 16 --seed 7 --label "$c" --out "$OUT/$c-$z-load" --plots=false | sed -n 1p
    sync
    echo 3 >/proc/sys/vm/drop_caches
    "$EMU" limit --memory "$RUN_MEMORY" "$WRAPPER_PID" || { echo "# $c: WARNING: could not set the memory limit" | tee -a "$OUT/conditions.txt"; }
    disk_stats "$c $z before" >>"$OUT/disks.txt"
    mkdir -p "$OUT/$c-$z"
    sample_minutes "$OUT/$c-$z" &
    SAMPLER_PID=$!
    "$KURA" bench run -w write-heavy "${COMMON[@]}" -p zipfianconstant="$z" --threads "$THREADS" --duration "$RUN" --warmup "$WARMUP" --seed 42 \
      --label "$c-$z" --out "$OUT/$c-$z" | sed -n 1p
    kill "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    disk_stats "$c $z after" >>"$OUT/disks.txt"
    curl -sf "http://127.0.0.1:$ADMIN/metrics" >"$OUT/$c-$z/metrics.txt" || true
    [[ "$c" == tiered* ]] && { curl -sf "http://127.0.0.1:$ADMIN/tiers" >"$OUT/$c-$z/tiers.json" || true; }
    du -sh "$HDD" "$SSD" "$SSD2" 2>/dev/null | sed "s|^|# $c $z du |" >>"$OUT/conditions.txt" || true
    stop_node
  done
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
done
