#!/usr/bin/env bash
# emulate-disks_test.sh: checks scripts/emulate-disks.sh without root, loop
# devices or real cgroups: syntax, shellcheck (when installed), the command
# line, the choice of cgroup flavour, and the exact lines written to cgroup
# files, against fake cgroup trees in a temporary directory.
#
# The real thing (up, run, verify, down) needs root and is checked by hand;
# docs/design/emulated-disks.md records that run.
#
# Usage: scripts/emulate-disks_test.sh   (exit status 0 when every check passes)

# The code passed to in_script is single-quoted on purpose: it expands later,
# inside the sourced script.
# shellcheck disable=SC2016

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=$here/emulate-disks.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

pass() { echo "ok   $1"; }
fail() {
	echo "FAIL $1" >&2
	failures=$((failures + 1))
}
# expect NAME WANT GOT
expect() { if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1: want '$2', got '$3'"; fi; }

# in_script CODE runs CODE in a subshell that has sourced the script (which
# only defines functions when sourced), so that die's exit stays contained.
in_script() { (
	# shellcheck disable=SC1090,SC1091 # checked on its own below
	source "$script"
	set +e
	eval "$1"
); }

if bash -n "$script"; then pass "bash -n"; else fail "bash -n"; fi
if command -v shellcheck >/dev/null; then
	if shellcheck "$script" "${BASH_SOURCE[0]}"; then pass "shellcheck"; else fail "shellcheck"; fi
else
	echo "skip shellcheck (apt-get install -y shellcheck)"
fi

# Command line.
"$script" help >/dev/null
expect "help exits 0" 0 $?
"$script" frobnicate >/dev/null 2>&1
expect "unknown command exits 2" 2 $?
"$script" run --memory 64M >/dev/null 2>&1
expect "run without a command exits 2" 2 $?
"$script" up --bogus >/dev/null 2>&1
expect "unknown flag exits 2" 2 $?

# Pure helpers.
expect "bytes 512M" 536870912 "$(in_script 'bytes 512M')"
expect "disk_kind ssd2" ssd "$(in_script 'disk_kind ssd2')"
in_script 'disk_kind nvme' >/dev/null 2>&1
expect "disk_kind rejects nvme" 2 $?
expect "hdd limits" "200 200 140000000 76000000" "$(in_script 'limits hdd')"
expect "ssd limits" "8500 8500 283000000 85000000" "$(in_script 'limits ssd')"
expect "limits follow the environment" "300 200 140000000 76000000" \
	"$(KURA_EMU_HDD_RIOPS=300 in_script 'limits hdd')"

# Fake cgroup trees and mount tables.
v1=$tmp/v1 v2=$tmp/v2
mkdir -p "$v1/blkio" "$v1/memory" "$v1/unified" "$v2"
echo "hugetlb" >"$v1/unified/cgroup.controllers"
echo "cpuset cpu io memory pids" >"$v2/cgroup.controllers"
: >"$v2/cgroup.subtree_control"
cat >"$tmp/mounts.v1" <<EOF
cgroup $v1/blkio cgroup rw,relatime,blkio 0 0
cgroup $v1/memory cgroup rw,relatime,memory 0 0
cgroup2 $v1/unified cgroup2 rw,relatime 0 0
EOF
cat >"$tmp/mounts.v2" <<EOF
cgroup2 $v2 cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
EOF

expect "v1 host: auto picks v1" "v1 $v1/blkio $v1/memory" \
	"$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 in_script 'cg_detect; echo "$CG_MODE $BLKIO_ROOT $MEM_ROOT"')"
expect "v2 host: auto picks v2" "v2 $v2" \
	"$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v2 in_script 'cg_detect; echo "$CG_MODE $V2_ROOT"')"
KURA_EMU_CGROUP=v2 KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 in_script 'cg_detect' >/dev/null 2>&1
expect "v1 host: forcing v2 fails" 1 $?

# v1: limits on the root blkio cgroup, one line per file; clearing writes 0.
got=$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 in_script '
	cg_detect
	cg_apply_limits 7:3 hdd
	cat "$BLKIO_ROOT"/blkio.throttle.{read_iops,write_iops,read_bps,write_bps}_device | tr "\n" ,
	cg_clear_limits 7:3
	cat "$BLKIO_ROOT"/blkio.throttle.read_iops_device')
expect "v1 limits and clearing" "7:3 200,7:3 200,7:3 140000000,7:3 76000000,7:3 0" "$got"

# v1 run: a memory cgroup under the caller's own, plus the root blkio cgroup.
self=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
mkdir -p "$v1/memory$self" "$tmp/state/runs"
got=$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 KURA_EMU_STATE_DIR=$tmp/state in_script '
	cg_detect
	cg_create_run 42 67108864
	printf "%s," "${RUN_PROCS[@]}"
	cat "${RUN_PROCS[0]%/cgroup.procs}/memory.limit_in_bytes"')
expect "v1 run cgroups" "$v1/memory${self%/}/kura-emu-run-42/cgroup.procs,$v1/blkio/cgroup.procs,67108864" "$got"
expect "v1 run is recorded" "$v1/memory${self%/}/kura-emu-run-42" "$(cat "$tmp/state/runs/42")"

# v1 limit: memory and memory+swap, in an order the kernel accepts (memsw >= memory).
run42=$v1/memory${self%/}/kura-emu-run-42
echo 67108864 >"$run42/memory.memsw.limit_in_bytes"
got=$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 KURA_EMU_STATE_DIR=$tmp/state in_script '
	cg_detect
	cg_set_memory 42 33554432
	echo "$(<"'"$run42"'/memory.limit_in_bytes") $(<"'"$run42"'/memory.memsw.limit_in_bytes")"
	cg_set_memory 42 134217728
	echo "$(<"'"$run42"'/memory.limit_in_bytes") $(<"'"$run42"'/memory.memsw.limit_in_bytes")"')
expect "v1 limit lowers and raises" "33554432 33554432
134217728 134217728" "$got"
KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 KURA_EMU_STATE_DIR=$tmp/state in_script 'cg_detect; cg_set_memory 99 1' >/dev/null 2>&1
expect "limit of an unknown run fails" 1 $?
"$script" limit 42 >/dev/null 2>&1
expect "limit without --memory exits 2" 2 $?

# v1 group: the run's memory cgroup inside the group's, which `limit --group` limits.
got=$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 KURA_EMU_STATE_DIR=$tmp/state in_script '
	cg_detect
	cg_create_run 44 3221225472 host1
	echo 9223372036854771712 >"$(<"$STATE_DIR/groups/host1")/memory.limit_in_bytes"
	cg_set_group_memory host1 536870912
	printf "%s," "${RUN_PROCS[@]}"
	cat "$(<"$STATE_DIR/groups/host1")/memory.limit_in_bytes"')
group1=$v1/memory${self%/}/kura-emu-group-host1
expect "v1 group run cgroups" "$group1/kura-emu-run-44/cgroup.procs,$v1/blkio/cgroup.procs,536870912" "$got"
expect "v1 group run's own limit" 3221225472 "$(cat "$group1/kura-emu-run-44/memory.limit_in_bytes")"
KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 KURA_EMU_STATE_DIR=$tmp/state in_script 'cg_detect; cg_set_group_memory nosuch 1' >/dev/null 2>&1
expect "limit of an unknown group fails" 1 $?
KURA_EMU_MOUNTS_FILE=$tmp/mounts.v1 KURA_EMU_STATE_DIR=$tmp/state in_script 'cg_detect; cg_create_run 45 1 "../x"' >/dev/null 2>&1
expect "a group name with a slash is refused" 1 $?

# v2: controllers enabled, io.max on the parent, the run a child with memory.max.
got=$(KURA_EMU_MOUNTS_FILE=$tmp/mounts.v2 KURA_EMU_STATE_DIR=$tmp/state in_script '
	cg_detect
	cg_apply_limits 7:4 ssd
	cg_create_run 43 134217728
	echo "$(<"$V2_ROOT/cgroup.subtree_control")|$(<"$V2_ROOT/kura-emu/cgroup.subtree_control")|$(<"$V2_ROOT/kura-emu/io.max")|${RUN_PROCS[*]}|$(<"$V2_ROOT/kura-emu/run-43/memory.max")"')
expect "v2 limits and run cgroup" \
	"+memory|+io +memory|7:4 riops=8500 wiops=8500 rbps=283000000 wbps=85000000|$v2/kura-emu/run-43/cgroup.procs|134217728" "$got"

if ((failures)); then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "all checks passed"
