#!/usr/bin/env bash
# A tiered node whose fast device fills before its budget does, and a hot set that then
# changes: does the new hot set reach the fast tier? Run as root (it mounts a tmpfs).
#
#   scripts/tier-device-full/run.sh [KURA] [PASSES]
#
# KURA is the kura binary (default: built from this tree into a temporary directory).
# It mounts a 256 MiB tmpfs as the fast device, starts the node with a 1 GB budget (four
# times what the device holds), writes 100,000 rows of 4 KiB, and runs hotset.py: phase 1
# reads the first 50,000 rows until the device is full, phase 2 reads the other 50,000
# PASSES times (default 40). Before the budget's device cap (2026-11-25), phase 2's share
# stayed 0: rows stopped moving in, and the cold rows of phase 1 kept the device.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/kura-tier-full.XXXXXX)
KURA=${1:-}
if [ -z "$KURA" ]; then
  KURA=$work/kura
  go build -o "$KURA" ./cmd/kura
fi
mkdir -p "$work/fast"
mount -t tmpfs -o size=256M tmpfs "$work/fast"
cleanup() {
  kill "$node" 2>/dev/null || true
  wait "$node" 2>/dev/null || true
  umount "$work/fast" || true
  rm -rf "$work"
}
trap cleanup EXIT
"$KURA" server --data-dir "$work/slow" --fast-dir "$work/fast/store" --fast-budget-bytes 1000000000 \
  --listen 127.0.0.1:36390 --admin-listen 127.0.0.1:39390 >"$work/node.log" 2>&1 &
node=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:39390/healthz >/dev/null && break; sleep 0.1; done
python3 scripts/tier-device-full/hotset.py 36390 127.0.0.1:39390 "${2:-40}" 100000
grep -E "budget cap|capped|room again" "$work/node.log" || true
