#!/usr/bin/env bash
# The paper's experiment (seed 000, issue 5) on emulated HDDs with data larger than memory:
# scripts/bench-hetero.sh with two emulated HDDs per host, the lsm write-ahead logs on one
# (hdd1..hdd3) and all other data on the other (hdd11..hdd13), as the paper's hosts had two
# disks and Cassandra's operators give the commit log a disk of its own; the heterogeneous
# hosts' B+tree files go on the log disk too (BTREE_DIR). Run as root (loop devices
# and cgroups); it brings the disks up if they are not, and leaves them up. Usage:
#
#   scripts/bench-hetero-hdd.sh [OUT]          (default OUT: bench-results/hetero-hdd)
#
# 1,000,000 records of 1 KB, written blind (string records); each host's disk-based nodes
# get 512 MiB between them once the records are loaded (homogeneous: the lsm node;
# heterogeneous: lsm 352 MiB, btree 160 MiB), the in-memory nodes room for their share.
# HINTS=log puts the nodes' hint stores on the log disks (--hints-dir) instead of their
# data directories. SHARED=1 gives each heterogeneous host's lsm and btree nodes their
# 512 MiB together (an emulate-disks.sh group per host) instead of 352 and 160 MiB
# apiece: the page cache then goes to whichever node reads, as on one machine. The lsm
# node's caches are anonymous memory the kernel cannot take back: with them at their
# defaults here the B+tree got less than 160 MiB; shrink them too (HETERO_FLAGS, see
# docs/benchmarks.md at 77be0fa, 2026-11-24). KURA_EMU_MODEL=seek gives the HDDs a disk head's
# timing instead of the block throttle (docs/design/emulated-disks.md), for latencies at a
# fixed rate. Any variable of bench-hetero.sh can be overridden from the environment. It takes about
# 35 minutes; the images need about 24 GB of free disk under /var/tmp/kura-disks.
# docs/bench/heterogeneous.md has the results; the reasons for each setting are in docs/benchmarks.md at 77be0fa.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-results/hetero-hdd}
EMU=scripts/emulate-disks.sh
# `up` is idempotent, and refuses a disk that is up with another model than
# KURA_EMU_MODEL asks for (emulate-disks.sh: throttle, or seek for a disk head's timing).
for d in 1 2 3; do
  KURA_EMU_DISKS="hdd$d" KURA_EMU_SIZE=2G "$EMU" up >/dev/null
  KURA_EMU_DISKS="hdd1$d" KURA_EMU_SIZE=6G "$EMU" up >/dev/null
done
# Write-ahead logs of an earlier run would be replayed into the new clusters' stores
# (unless that run's data is reused, REUSE_DATA=1).
# So would B+tree files of an earlier run be read.
[ -n "${REUSE_DATA:-}" ] || rm -rf /mnt/kura-hdd{1,2,3}/wal-homogeneous /mnt/kura-hdd{1,2,3}/wal-heterogeneous \
  /mnt/kura-hdd{1,2,3}/btree-heterogeneous /mnt/kura-hdd{1,2,3}/hints-* /mnt/kura-hdd1{1,2,3}/walfailover-*

export RECORDS=${RECORDS:-1000000} RATE=${RATE:-200}
# The B+tree nodes cannot take random inserts as fast as the load comes (their writes are
# deferred to hints); they are rebuilt from their peers in key order after it.
export REBUILD=${REBUILD-1}
export DATA_ROOT=${DATA_ROOT:-'/mnt/kura-hdd1{host}'}
# GOMEMLIMIT keeps a disk-based node's Go heap, which grows while the records load, small
# enough for the limit set afterwards; in-memory nodes hold their rows on the heap.
export NODE_WRAPPER=${NODE_WRAPPER:-"env GOMEMLIMIT=200MiB $EMU run --disk hdd1{host} --memory 3G --"}
# The heterogeneous cluster's disk-based nodes get less: a 352 MiB lsm node's caches and
# memtables (128 MiB, outside the Go heap) fill once it serves reads (load-aware routing
# sends it the reads a lagging B+tree would have had), and a 200 MiB heap beside them
# overran the limit (one lsm node was killed by its cgroup, 2026-11-22 03:56 UTC).
GROUP=""
[ -n "${SHARED:-}" ] && GROUP="--group hetero{host}"
export HETERO_WRAPPER=${HETERO_WRAPPER:-"env GOMEMLIMIT=128MiB $EMU run --disk hdd1{host} --memory 3G $GROUP --"}
export MEMORY_NODE_WRAPPER=${MEMORY_NODE_WRAPPER:-"$EMU run --disk hdd1{host} --memory 3G --"}
export SERVER_FLAGS=${SERVER_FLAGS:-"--durability=periodic --lsm-memtable-size-bytes=16777216"}
# HINTS=log puts every node's hint store on its host's log disk (--hints-dir), away from
# the data disk's flushes and compactions; by default it stays in the data directory.
HINTS_ROOT=""
[ "${HINTS:-}" = log ] && HINTS_ROOT='/mnt/kura-hdd{host}/hints-{engine}'
# The heterogeneous cluster's logs fail over to the data disk while a sync of the log
# disk takes over 100 ms (--lsm-wal-failover-dir): on its hosts the B+tree's writeback
# held the log's fsyncs for 1.2 s on average, and every commit behind them
# (docs/benchmarks.md at 77be0fa, 2026-11-24). The homogeneous hosts' log disks hold nothing else
# (no sync of 250 ms or more through write-only), and failing over to their busy data
# disks they did worse in the one run that tried. FAILOVER= leaves it out; FAILOVER=both gives it
# to both clusters.
FAILOVER=${FAILOVER-1}
failover() { [ -n "$FAILOVER" ] && echo " --lsm-wal-failover-dir=/mnt/kura-hdd1{host}/walfailover-$1"; return 0; }
export HOMO_FLAGS=${HOMO_FLAGS:-"--lsm-cache-size-bytes=134217728 --lsm-row-cache-bytes=67108864 --lsm-wal-dir=/mnt/kura-hdd{host}/wal-homogeneous$([ "$FAILOVER" = both ] && failover homogeneous)${HINTS_ROOT:+ --hints-dir=$HINTS_ROOT-homogeneous}"}
# The heterogeneous hosts keep the B+tree file on the log disk (--btree-dir), away from
# the lsm node's sstables: its random page writes would take the I/O their flushes need
# (BTREE_DIR= keeps it in the data directory, on the data disk, as the first runs did).
BTREE_DIR=${BTREE_DIR-'/mnt/kura-hdd{host}/btree-heterogeneous'}
export HETERO_FLAGS=${HETERO_FLAGS:-"--lsm-cache-size-bytes=67108864 --lsm-row-cache-bytes=33554432 --lsm-wal-dir=/mnt/kura-hdd{host}/wal-heterogeneous$(failover heterogeneous)${BTREE_DIR:+ --btree-dir=$BTREE_DIR}${HINTS_ROOT:+ --hints-dir=$HINTS_ROOT-heterogeneous}"}
# HETERO_EXTRA_FLAGS are added to the heterogeneous cluster's flags, default or given, e.g.
# "--btree-write-buffer-bytes=33554432".
HETERO_FLAGS+=${HETERO_EXTRA_FLAGS:+ $HETERO_EXTRA_FLAGS}
SPLIT="lsm=352M btree=160M"
[ -n "${SHARED:-}" ] && SPLIT="@hetero{host}=512M"
export HOMO_LIMITS=${HOMO_LIMITS:-"lsm=512M"} HETERO_LIMITS=${HETERO_LIMITS:-$SPLIT}
status=0
scripts/bench-hetero.sh "$OUT" || status=$?
if [ "$status" -eq 0 ]; then
  rm -rf /mnt/kura-hdd{1,2,3}/wal-homogeneous /mnt/kura-hdd{1,2,3}/wal-heterogeneous /mnt/kura-hdd{1,2,3}/btree-heterogeneous \
    /mnt/kura-hdd{1,2,3}/hints-* /mnt/kura-hdd1{1,2,3}/walfailover-*
  for d in 1 2 3; do fstrim "/mnt/kura-hdd$d" 2>/dev/null || true; done
fi
exit "$status"
