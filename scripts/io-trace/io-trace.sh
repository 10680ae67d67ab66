#!/usr/bin/env bash
# io-trace.sh MOUNT SECONDS [ADMIN_PORT]: which files and which kinds of sstable block a
# store's device reads fetch. Traces the block device under MOUNT (perf's
# block:block_rq_issue) for SECONDS while the store runs, maps each read request's sectors
# to a file through the files' extents (filefrag) and, inside an sstable, to the kind of
# block there (go run ./scripts/sst-layout), and prints requests and bytes by file type and
# block kind, split into small requests (up to 16 KiB: a point read's block) and large ones
# (readahead: compactions, scans, logs). With ADMIN_PORT (a tiered node's admin address on
# 127.0.0.1) it also prints the slow tier's reads over the same seconds, to put the
# requests per read.
#
# The store's files are hard-linked under MOUNT/.io-trace before and after the trace, so
# that a table compacted away meanwhile keeps its blocks (and their addresses) until the
# mapping is done; tables both made and deleted within the trace show as "unmapped".
# Needs root, perf and filefrag. Example (the tiered benchmark's second slot):
#   scripts/io-trace/io-trace.sh /mnt/kura-hdd21 60 27491
set -euo pipefail
mnt=$1 secs=$2 port=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
dev=$(findmnt -n -o SOURCE --mountpoint "$mnt")
devnum=$(( $(stat -c '0x%t' "$dev") << 20 | $(stat -c '0x%T' "$dev") ))
snap="$mnt/.io-trace" work=$(mktemp -d)
trap 'rm -rf "$snap"; [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
link_all() {
  mkdir -p "$snap"
  find "$mnt" -path "$snap" -prune -o -type f -print | while read -r f; do
    id=$(stat -c %i "$f" 2>/dev/null) || continue
    compgen -G "$snap/$id-*" >/dev/null || ln "$f" "$snap/$id-$(basename "$f")" 2>/dev/null || true
  done
}
tier_reads() { [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/tiers" | python3 -c 'import json,sys; t=json.load(sys.stdin); print(t["tiers"][1]["reads"])' || echo 0; }
link_all
r0=$(tier_reads)
perf record -q -e block:block_rq_issue --filter "dev == $devnum" -a -o "$work/perf.data" -- sleep "$secs" 2>/dev/null
r1=$(tier_reads)
link_all
perf script -i "$work/perf.data" -F trace 2>/dev/null >"$work/trace.txt"
for f in "$snap"/*; do echo "== $f"; filefrag -e -b512 "$f" 2>/dev/null; done >"$work/extents.txt"
mkdir -p "$work/sst" && for f in "$snap"/*.sst; do ln -s "$f" "$work/sst/$(basename "$f")"; done 2>/dev/null || true
(cd "$here/../.." && go run ./scripts/sst-layout "$work/sst" 2>/dev/null) >"$work/layout.txt"
python3 "$here/join.py" "$work/trace.txt" "$work/extents.txt" "$work/layout.txt" "$secs" "$((r1 - r0))"
