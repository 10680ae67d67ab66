#!/usr/bin/env bash
# emulate-disks.sh: emulate the papers' slow HDD and faster SSD on one Linux
# machine, and run commands (kura nodes, fio) on them with too little memory for
# the page cache to hold the data set.
#
# Each emulated disk is an ext4 filesystem on a loop device (direct I/O to a
# sparse image file under the state directory), mounted at MOUNT_ROOT/kura-NAME
# and throttled with the kernel's block throttle (cgroup v1 blkio.throttle.*,
# or cgroup v2 io.max). `run` starts a command in a fresh memory cgroup so the
# page cache cannot hide the device. docs/design/emulated-disks.md explains the
# choices, what is and is not emulated, and the figures measured with `verify`.
#
# Usage (as root):
#   emulate-disks.sh up      [--disks "hdd ssd"] [--size 4G] [--mount-root /mnt] [--state-dir DIR]
#   emulate-disks.sh run     [--memory 512M] [--disk NAME]... [--group NAME] -- COMMAND [ARGS...]
#   emulate-disks.sh limit   --memory SIZE RUN...   (RUN: pid of a running `run`)
#   emulate-disks.sh limit   --memory SIZE --group NAME
#   emulate-disks.sh verify  [--memory 64M] [--size 256M] [--runtime 3]
#   emulate-disks.sh status
#   emulate-disks.sh down    [--purge]
#
# Example with kura (build first so the compiler does not run under the limit):
#   go build -o /tmp/kura ./cmd/kura
#   scripts/emulate-disks.sh up
#   scripts/emulate-disks.sh run --disk hdd --memory 256M -- \
#       /tmp/kura server --data-dir /mnt/kura-hdd/n1
#   scripts/emulate-disks.sh down
#
# Settings (flags win over environment variables):
#   KURA_EMU_STATE_DIR    state directory with the images      (/var/tmp/kura-disks)
#   KURA_EMU_MOUNT_ROOT   disks are mounted at ROOT/kura-NAME  (/mnt)
#   KURA_EMU_DISKS        disk names: hdd, ssd, hdd2, ssd3 ... ("hdd ssd")
#   KURA_EMU_SIZE         image size per disk, sparse          (4G)
#   KURA_EMU_READ_AHEAD_KB  read-ahead of the loop devices     (1024)
#   KURA_EMU_CGROUP       cgroup flavour: auto, v1 or v2       (auto)
#   KURA_EMU_CGROUP_NAME  name of the cgroups this script makes (kura-emu)
#   KURA_EMU_{HDD,SSD}_{RIOPS,WIOPS,RBPS,WBPS}  limits, I/Os/s and bytes/s:
#       HDD 200, 200, 140000000, 76000000; SSD 8500, 8500, 283000000, 85000000
#   KURA_EMU_MOUNTS_FILE  mount table to read (/proc/self/mounts; tests only)
#   KURA_EMU_MODEL        how an HDD is slowed: throttle (the block throttle's limits
#       above) or seek (a disk head's timing: each random I/O waits a seek,
#       KURA_EMU_HDD_ACCESS, default 5ms; sequential ones their transfer at the
#       RBPS/WBPS rates; reads and writes share the head). seek serves the image
#       through kura-slowdisk over FUSE (built from this repository into the state
#       directory unless KURA_EMU_SLOWDISK names the binary) and puts the loop device
#       on that; it needs /dev/fuse. SSDs are always throttled.    (throttle)
#
# `limit` changes the memory limit of runs already going, e.g. to load a data set with room
# to spare and then measure with the page cache squeezed: lowering it makes the kernel
# reclaim the runs' page cache at once.
#
# `run --group NAME` puts the run's cgroup inside the group's (made on first use), and
# `limit --group NAME` limits the group: its runs then share that memory, page cache
# included, as the processes of one machine share its RAM, and the kernel gives the page
# cache to whichever of them reads most, where a limit per run splits it beforehand.
#
# Exit status: 0 on success, 1 on failure, 2 on a usage error; `run` exits with
# the command's status.

set -euo pipefail

PROG=${0##*/}
SELF=$(readlink -f "${BASH_SOURCE[0]}")

STATE_DIR=${KURA_EMU_STATE_DIR:-/var/tmp/kura-disks}
MOUNT_ROOT=${KURA_EMU_MOUNT_ROOT:-/mnt}
DISKS=${KURA_EMU_DISKS:-hdd ssd}
SIZE=${KURA_EMU_SIZE:-4G}
READ_AHEAD_KB=${KURA_EMU_READ_AHEAD_KB:-1024}
CG_WANT=${KURA_EMU_CGROUP:-auto}
CG_NAME=${KURA_EMU_CGROUP_NAME:-kura-emu}
MOUNTS_FILE=${KURA_EMU_MOUNTS_FILE:-/proc/self/mounts}
MODEL=${KURA_EMU_MODEL:-throttle}
HDD_ACCESS=${KURA_EMU_HDD_ACCESS:-5ms}
SLOWDISK=${KURA_EMU_SLOWDISK:-}

# The papers' devices (issue 3; seeds 001 and 003). Bytes are SI: 1 MB = 10^6 B.
# Write IOPS are not in the papers' tables: we use the random-read figure for
# both devices (see docs/design/emulated-disks.md, "Write IOPS").
HDD_RIOPS=${KURA_EMU_HDD_RIOPS:-200}
HDD_WIOPS=${KURA_EMU_HDD_WIOPS:-200}
HDD_RBPS=${KURA_EMU_HDD_RBPS:-140000000}
HDD_WBPS=${KURA_EMU_HDD_WBPS:-76000000}
SSD_RIOPS=${KURA_EMU_SSD_RIOPS:-8500}
SSD_WIOPS=${KURA_EMU_SSD_WIOPS:-8500}
SSD_RBPS=${KURA_EMU_SSD_RBPS:-283000000}
SSD_WBPS=${KURA_EMU_SSD_WBPS:-85000000}

# Set by cg_detect (or cg_load): the cgroup flavour and where its files are.
CG_MODE=""      # v1 or v2
BLKIO_ROOT=""   # v1: root of the blkio hierarchy, which holds the limits
MEM_ROOT=""     # v1: root of the memory hierarchy
V2_ROOT=""      # v2: root of the unified hierarchy

die() { echo "$PROG: $*" >&2; exit 1; }
usage_error() { echo "$PROG: $*" >&2; echo "Try '$PROG help'." >&2; exit 2; }
note() { echo "$PROG: $*" >&2; }

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SELF"; }

require_root() {
	[[ ${EUID:-$(id -u)} -eq 0 ]] || die "$1 needs root (loop devices, mounts and cgroups)"
}

# require_tools checks that each named command exists and says which package
# provides the missing ones.
require_tools() {
	local t missing=()
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || missing+=("$t")
	done
	((${#missing[@]} == 0)) && return 0
	local pkgs=()
	for t in "${missing[@]}"; do
		case $t in
		fio) pkgs+=(fio) ;;
		mkfs.ext4 | blkid) pkgs+=(e2fsprogs) ;;
		numfmt | truncate | readlink | df) pkgs+=(coreutils) ;;
		*) pkgs+=(util-linux) ;;
		esac
	done
	die "missing tools: ${missing[*]} (install with: apt-get install -y $(printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' '))"
}

# bytes converts a size such as 512M or 4G (powers of 1024) to bytes.
bytes() {
	local n
	n=$(numfmt --from=iec "$1" 2>/dev/null) || usage_error "not a size: $1"
	[[ $n =~ ^[0-9]+$ ]] || usage_error "not a size: $1"
	echo "$n"
}

# human BYTES prints a byte count as 512M or 4.0G; other words (max) as they are.
human() { if [[ $1 =~ ^[0-9]+$ ]]; then numfmt --to=iec "$1"; else echo "$1"; fi; }

# kv_get FILE KEY prints the value of KEY in a file of KEY=VALUE lines.
kv_get() { [[ -r $1 ]] || return 0; awk -F= -v k="$2" '$1 == k { sub(/^[^=]*=/, ""); print; exit }' "$1"; }

# disk_kind NAME prints hdd or ssd for a disk name such as hdd or ssd2.
disk_kind() {
	[[ $1 =~ ^(hdd|ssd)[0-9]*$ ]] || usage_error "disk names are hdd, ssd, hdd2, ssd2, ...; got '$1'"
	echo "${BASH_REMATCH[1]}"
}

# limits KIND prints "riops wiops rbps wbps" for hdd or ssd.
limits() {
	case $1 in
	hdd) echo "$HDD_RIOPS $HDD_WIOPS $HDD_RBPS $HDD_WBPS" ;;
	ssd) echo "$SSD_RIOPS $SSD_WIOPS $SSD_RBPS $SSD_WBPS" ;;
	*) die "unknown disk kind: $1" ;;
	esac
}

# put FILE VALUE writes one line to a cgroup or sysfs file in one write.
put() {
	if ! printf '%s\n' "$2" >"$1" 2>/dev/null; then
		die "cannot write '$2' to $1"
	fi
}

# ---------------------------------------------------------------------------
# cgroups

# cg_detect chooses v2 when the unified hierarchy offers both the io and memory
# controllers, else v1 when blkio and memory hierarchies are mounted.
cg_detect() {
	local v2 ctl blkio mem
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' "$MOUNTS_FILE")
	ctl=""
	[[ -n $v2 && -r $v2/cgroup.controllers ]] && ctl=$(<"$v2/cgroup.controllers")
	blkio=$(awk '$3 == "cgroup" && $4 ~ /(^|,)blkio(,|$)/ { print $2; exit }' "$MOUNTS_FILE")
	mem=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' "$MOUNTS_FILE")
	local v2ok=0 v1ok=0
	[[ " $ctl " == *" io "* && " $ctl " == *" memory "* ]] && v2ok=1
	[[ -n $blkio && -n $mem ]] && v1ok=1
	case $CG_WANT in
	auto) if ((v2ok)); then CG_MODE=v2; elif ((v1ok)); then CG_MODE=v1; fi ;;
	v2) ((v2ok)) && CG_MODE=v2 ;;
	v1) ((v1ok)) && CG_MODE=v1 ;;
	*) usage_error "KURA_EMU_CGROUP must be auto, v1 or v2" ;;
	esac
	[[ -n $CG_MODE ]] || die "no usable cgroups (want=$CG_WANT): need cgroup v2 with the io and memory controllers, or cgroup v1 blkio and memory hierarchies"
	if [[ $CG_MODE == v2 ]]; then V2_ROOT=$v2; else BLKIO_ROOT=$blkio MEM_ROOT=$mem; fi
}

# cg_save and cg_load record the flavour chosen by `up` so that later commands
# use the same one even if the environment changes.
cg_save() {
	{
		echo "cg_mode=$CG_MODE"
		echo "blkio_root=$BLKIO_ROOT"
		echo "mem_root=$MEM_ROOT"
		echo "v2_root=$V2_ROOT"
	} >"$STATE_DIR/cgroup"
}

cg_load() {
	local f=$STATE_DIR/cgroup
	[[ -r $f ]] || return 1
	CG_MODE=$(kv_get "$f" cg_mode)
	BLKIO_ROOT=$(kv_get "$f" blkio_root)
	MEM_ROOT=$(kv_get "$f" mem_root)
	V2_ROOT=$(kv_get "$f" v2_root)
	[[ -n $CG_MODE ]]
}

# The v2 parent cgroup holds io.max for all emulated disks; every run is a
# child of it, so all runs share each device's budget as they would share one
# physical disk.
v2_parent() { echo "$V2_ROOT/$CG_NAME"; }

# cg_apply_limits MAJ:MIN KIND throttles one device.
#
# v1: the limits go on the ROOT blkio cgroup. v1 block throttling is flat (a
# child's I/O is checked against the child's own limits only), and buffered
# writeback, the ext4 journal and other kernel threads submit I/O from the root
# cgroup; limits at the root therefore throttle every bio to the loop device
# from any process, which is what a slow device does. They are keyed by the
# loop device only, so nothing else on the machine is affected.
#
# v2: io.max may not be set on the root; the limits go on $CG_NAME, the parent
# of every run. Writeback of pages dirtied by a run is attributed to the run
# (cgroup writeback), but I/O from outside the runs is not throttled.
cg_apply_limits() {
	local mm=$1 ri wi rb wb
	read -r ri wi rb wb <<<"$(limits "$2")"
	if [[ $CG_MODE == v1 ]]; then
		put "$BLKIO_ROOT/blkio.throttle.read_iops_device" "$mm $ri"
		put "$BLKIO_ROOT/blkio.throttle.write_iops_device" "$mm $wi"
		put "$BLKIO_ROOT/blkio.throttle.read_bps_device" "$mm $rb"
		put "$BLKIO_ROOT/blkio.throttle.write_bps_device" "$mm $wb"
	else
		v2_ensure_parent
		put "$(v2_parent)/io.max" "$mm riops=$ri wiops=$wi rbps=$rb wbps=$wb"
	fi
}

# cg_clear_limits MAJ:MIN removes this script's limits for one device. Loop
# devices outlive detaching, so a leftover rule would slow the next user.
cg_clear_limits() {
	local mm=$1 f
	if [[ $CG_MODE == v1 ]]; then
		for f in read_iops write_iops read_bps write_bps; do
			f=$BLKIO_ROOT/blkio.throttle.${f}_device
			if grep -q "^$mm " "$f" 2>/dev/null; then put "$f" "$mm 0"; fi
		done
	elif [[ -e $(v2_parent)/io.max ]] && grep -q "^$mm " "$(v2_parent)/io.max"; then
		put "$(v2_parent)/io.max" "$mm riops=max wiops=max rbps=max wbps=max"
	fi
}

# cg_show_limits MAJ:MIN prints the limits in force for one device.
cg_show_limits() {
	local mm=$1 f out=""
	if [[ $CG_MODE == v1 ]]; then
		for f in read_iops write_iops read_bps write_bps; do
			out+="${f}=$(awk -v d="$mm" '$1 == d { print $2 }' "$BLKIO_ROOT/blkio.throttle.${f}_device" 2>/dev/null) "
		done
		echo "${out% }"
	else
		awk -v d="$mm" '$1 == d { $1 = ""; sub(/^ /, ""); print }' "$(v2_parent)/io.max" 2>/dev/null || true
	fi
}

v2_ensure_parent() {
	local p
	p=$(v2_parent)
	local sub
	sub=$(<"$V2_ROOT/cgroup.subtree_control")
	[[ " $sub " == *" io "* ]] || put "$V2_ROOT/cgroup.subtree_control" "+io"
	[[ " $sub " == *" memory "* ]] || put "$V2_ROOT/cgroup.subtree_control" "+memory"
	[[ -d $p ]] || mkdir "$p" || die "cannot create cgroup $p"
	sub=""
	[[ -r $p/cgroup.subtree_control ]] && sub=$(<"$p/cgroup.subtree_control")
	[[ " $sub " == *" io "* && " $sub " == *" memory "* ]] || put "$p/cgroup.subtree_control" "+io +memory"
}

# cg_create_run ID BYTES creates the cgroups of one run and sets RUN_PROCS to
# the cgroup.procs files the command must join. Each cgroup is recorded in
# STATE_DIR/runs/ID before it is configured, so cleanup finds it on failure.
#
# v1: a memory cgroup nested under the caller's own memory cgroup (so whatever
# accounts for the caller still sees the run), and the root blkio cgroup,
# where the limits live.
# v2: a child of the parent cgroup that holds io.max.
# With a third argument, GROUP, the run's cgroup goes inside that group's (cg_group).
RUN_PROCS=()
cg_create_run() {
	local id=$1 mem=$2 group=${3:-} dir parent=""
	if [[ -n $group ]]; then parent=$(cg_group "$group") || die "cannot make the cgroup of group $group"; fi
	if [[ $CG_MODE == v1 ]]; then
		local self
		self=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
		dir=$MEM_ROOT${self%/}/$CG_NAME-run-$id
		[[ -n $parent ]] && dir=$parent/$CG_NAME-run-$id
		mkdir "$dir" || die "cannot create memory cgroup $dir"
		echo "$dir" >>"$STATE_DIR/runs/$id"
		put "$dir/memory.limit_in_bytes" "$mem"
		# Cap memory+swap too, so the kernel cannot swap out the process
		# instead of dropping page cache.
		if [[ -e $dir/memory.memsw.limit_in_bytes ]]; then
			printf '%s\n' "$mem" >"$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
		fi
		RUN_PROCS=("$dir/cgroup.procs" "$BLKIO_ROOT/cgroup.procs")
	else
		v2_ensure_parent
		dir=$(v2_parent)/run-$id
		[[ -n $parent ]] && dir=$parent/run-$id
		mkdir "$dir" || die "cannot create cgroup $dir"
		echo "$dir" >>"$STATE_DIR/runs/$id"
		put "$dir/memory.max" "$mem"
		if [[ -e $dir/memory.swap.max ]]; then
			printf '0\n' >"$dir/memory.swap.max" 2>/dev/null || true
		fi
		RUN_PROCS=("$dir/cgroup.procs")
	fi
}

# cg_group NAME makes (unless it exists) the cgroup of a group of runs and prints it:
# v1 a memory cgroup under the caller's own, v2 a child of the parent cgroup, with the
# memory and io controllers handed down to its runs. It is recorded in
# STATE_DIR/groups/NAME, where `limit --group` finds it; it has no limit until one is set.
cg_group() {
	local name=$1 dir
	[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || usage_error "not a group name: $name"
	if [[ $CG_MODE == v1 ]]; then
		local self
		self=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
		dir=$MEM_ROOT${self%/}/$CG_NAME-group-$name
	else
		v2_ensure_parent
		dir=$(v2_parent)/group-$name
	fi
	mkdir -p "$STATE_DIR/groups"
	echo "$dir" >"$STATE_DIR/groups/$name"
	# Another run of the same group may make it at the same moment.
	[[ -d $dir ]] || mkdir "$dir" 2>/dev/null || [[ -d $dir ]] || die "cannot create cgroup $dir"
	if [[ $CG_MODE == v2 ]]; then
		local sub=""
		[[ -r $dir/cgroup.subtree_control ]] && sub=$(<"$dir/cgroup.subtree_control")
		[[ " $sub " == *" io "* && " $sub " == *" memory "* ]] || put "$dir/cgroup.subtree_control" "+io +memory"
	fi
	echo "$dir"
}

# cg_remove_group NAME removes a group's cgroup once no run is left in it.
cg_remove_group() {
	local rec=$STATE_DIR/groups/$1 dir
	[[ -r $rec ]] || return 0
	dir=$(<"$rec")
	if [[ -d $dir ]]; then rmdir "$dir" 2>/dev/null || return 0; fi
	rm -f "$rec"
}

# cg_set_dir_memory DIR BYTES sets one cgroup's memory limit.
cg_set_dir_memory() {
	local dir=$1 cur
	if [[ $CG_MODE == v1 ]]; then
		# memory+swap may never be below memory: lower memory first, raise it last.
		cur=$(<"$dir/memory.limit_in_bytes")
		if ((cur > $2)); then put "$dir/memory.limit_in_bytes" "$2"; fi
		if [[ -e $dir/memory.memsw.limit_in_bytes ]]; then
			printf '%s\n' "$2" >"$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
		fi
		if ((cur <= $2)); then put "$dir/memory.limit_in_bytes" "$2"; fi
	else
		put "$dir/memory.max" "$2"
	fi
}

# cg_set_memory ID BYTES changes the memory limit of a run's cgroups.
cg_set_memory() {
	local rec=$STATE_DIR/runs/$1 dir
	[[ -r $rec ]] || die "limit: no run $1 (give the pid of a running '$PROG run')"
	while read -r dir; do
		[[ -d $dir ]] || continue
		cg_set_dir_memory "$dir" "$2"
	done <"$rec"
}

# cg_set_group_memory NAME BYTES changes the memory limit of a group of runs.
cg_set_group_memory() {
	local rec=$STATE_DIR/groups/$1 dir=""
	[[ -r $rec ]] && dir=$(<"$rec")
	[[ -n $dir && -d $dir ]] || die "limit: no group $1 (start a run with --group $1 first)"
	cg_set_dir_memory "$dir" "$2"
}

# cg_remove_run ID removes the cgroups of one run if no process is left in
# them, and returns 1 (naming the processes) otherwise.
cg_remove_run() {
	local rec=$STATE_DIR/runs/$1 dir left=0
	[[ -r $rec ]] || return 0
	while read -r dir; do
		[[ -d $dir ]] || continue
		# cgroup files report size 0: read them, do not stat them.
		if [[ -n $(<"$dir/cgroup.procs") ]]; then
			note "run $1: processes still in $dir: $(tr '\n' ' ' <"$dir/cgroup.procs")"
			left=1
			continue
		fi
		local try
		for try in 1 2 3 4 5; do
			rmdir "$dir" 2>/dev/null && break
			((try < 5)) && sleep 0.2
		done
		[[ -d $dir ]] && { note "cannot remove cgroup $dir"; left=1; }
	done <"$rec"
	((left)) && return 1
	rm -f "$rec"
}

# cg_sweep_runs removes the cgroups of earlier runs whose wrapper is gone
# (killed with SIGKILL, say) and whose processes have all exited.
cg_sweep_runs() {
	local r
	for r in "$STATE_DIR"/runs/*; do
		[[ -e $r ]] || continue
		kill -0 "${r##*/}" 2>/dev/null && continue
		cg_remove_run "${r##*/}" 2>/dev/null || true
	done
}

# ---------------------------------------------------------------------------
# disks

disk_state() { echo "$STATE_DIR/$1.state"; }
disk_image() { echo "$STATE_DIR/$1.img"; }

# disk_fuse NAME prints where the seek model serves NAME's image (KURA_EMU_MODEL=seek).
disk_fuse() { echo "$STATE_DIR/fuse-$1"; }

# disk_backing NAME prints the file NAME's loop device reads: its image, or the image
# as kura-slowdisk serves it.
disk_backing() {
	if [[ $(kv_get "$(disk_state "$1")" model) == seek ]]; then echo "$(disk_fuse "$1")/disk"; else disk_image "$1"; fi
}

# loops_backed_by FILE prints the loop devices attached to FILE. It compares names, as
# `losetup -j` does not: that stats FILE, which fails once a seek model's daemon has died
# (killed with the session that started it) and left its mount unanswering, and then the
# loop could never be found to take it down.
loops_backed_by() {
	losetup -ln -O NAME,BACK-FILE 2>/dev/null |
		awk -v f="$1" '{ n = $1; sub(/^[^ ]+ +/, ""); sub(/ \(deleted\)$/, ""); if ($0 == f) print n }'
}

# loop_backed_by LOOP FILE: whether LOOP is attached to FILE (by name, as above).
loop_backed_by() {
	loops_backed_by "$2" | grep -qx -- "$1"
}

# disk_loops NAME prints the loop devices attached to NAME's image, directly or through
# the seek model.
disk_loops() {
	loops_backed_by "$(disk_image "$1")"
	loops_backed_by "$(disk_fuse "$1")/disk"
}

# slowdisk_bin prints the kura-slowdisk binary, built from this repository into the
# state directory (each time: the build cache makes it quick, and an old binary is never
# served by mistake).
slowdisk_bin() {
	if [[ -n $SLOWDISK ]]; then echo "$SLOWDISK"; return; fi
	local bin=$STATE_DIR/kura-slowdisk root
	root=$(dirname "$SELF")/..
	command -v go >/dev/null || die "KURA_EMU_MODEL=seek needs go to build kura-slowdisk (or KURA_EMU_SLOWDISK)"
	(cd "$root" && go build -o "$bin" ./cmd/kura-slowdisk) || die "cannot build kura-slowdisk"
	echo "$bin"
}

# slowdisk_up NAME serves NAME's image with a disk head's timing at disk_fuse NAME,
# unless it is served already, and records the server's pid in the disk's state.
slowdisk_up() {
	local name=$1 dir pid bin
	dir=$(disk_fuse "$name")
	[[ -e /dev/fuse ]] || die "KURA_EMU_MODEL=seek needs /dev/fuse"
	mkdir -p "$dir"
	if ! findmnt -rn --mountpoint "$dir" >/dev/null 2>&1; then
		bin=$(slowdisk_bin)
		setsid "$bin" --image "$(disk_image "$name")" --mount "$dir" --access "$HDD_ACCESS" \
			--read-bps "$HDD_RBPS" --write-bps "$HDD_WBPS" --stats "$STATE_DIR/$name.diskstats" \
			</dev/null >"$STATE_DIR/$name.slowdisk.log" 2>&1 9>&- &
		pid=$!
		local tries=50
		while ((tries-- > 0)) && ! findmnt -rn --mountpoint "$dir" >/dev/null 2>&1; do
			kill -0 "$pid" 2>/dev/null || die "kura-slowdisk exited: $(cat "$STATE_DIR/$name.slowdisk.log")"
			sleep 0.1
		done
		findmnt -rn --mountpoint "$dir" >/dev/null 2>&1 || die "kura-slowdisk did not mount $dir"
		echo "$pid" >"$STATE_DIR/$name.slowdisk.pid"
	fi
}

# slowdisk_down NAME stops NAME's seek model (its loop device must be detached).
slowdisk_down() {
	local name=$1 pidf pid tries=100
	pidf=$STATE_DIR/$name.slowdisk.pid
	[[ -r $pidf ]] || return 0
	pid=$(<"$pidf")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		while ((tries-- > 0)) && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && die "kura-slowdisk ($pid) did not stop; see $STATE_DIR/$name.slowdisk.log"
	fi
	# A mount whose daemon died cannot be unmounted normally ("transport endpoint is not
	# connected"); its loop device is detached by now, so nothing uses it.
	if findmnt -rn --mountpoint "$(disk_fuse "$name")" >/dev/null 2>&1; then
		umount "$(disk_fuse "$name")" 2>/dev/null || umount -l "$(disk_fuse "$name")" ||
			die "cannot unmount $(disk_fuse "$name")"
	fi
	rm -f "$pidf"
	rmdir "$(disk_fuse "$name")" 2>/dev/null || true
}

# up_disk NAME attaches, formats (new images only), mounts and throttles one disk.
up_disk() {
	local name=$1 kind img mnt loop mm dev
	kind=$(disk_kind "$name")
	img=$(disk_image "$name")
	mnt=$MOUNT_ROOT/kura-$name

	local fresh=0
	if [[ ! -e $img ]]; then
		truncate -s "$SIZE" "$img"
		fresh=1
	fi
	local model=throttle backing=$img
	if [[ $kind == hdd && $MODEL == seek ]]; then
		model=seek
		backing=$(disk_fuse "$name")/disk
	elif [[ $MODEL != throttle && $MODEL != seek ]]; then
		usage_error "KURA_EMU_MODEL must be throttle or seek; got '$MODEL'"
	fi
	loop=$(disk_loops "$name" | head -n 1)
	if [[ -n $loop && $(losetup -n -O BACK-FILE "$loop") != "$backing" ]]; then
		die "$name is attached as $loop to $(losetup -n -O BACK-FILE "$loop"), not $backing: run '$PROG down' first to change its model"
	fi
	[[ $model == seek ]] && slowdisk_up "$name"
	if [[ -z $loop ]]; then
		loop=$(losetup --find --show --direct-io=on "$backing") || die "losetup failed for $backing"
	fi
	dev=${loop##*/}
	mm=$(<"/sys/block/$dev/dev")
	# Write the state before anything can fail, so that `down` finds the device.
	printf 'name=%s\nkind=%s\nloop=%s\nmajmin=%s\nmount=%s\nmodel=%s\n' "$name" "$kind" "$loop" "$mm" "$mnt" "$model" >"$(disk_state "$name")"
	if [[ $(cat "/sys/block/$dev/loop/dio" 2>/dev/null) != 1 ]]; then
		note "WARNING: $loop does not use direct I/O to $img (is $STATE_DIR on tmpfs?);"
		note "  the image's own page cache would then cache data behind the emulated device"
	fi
	if ((fresh)); then
		# Initialise inode tables and journal now, not later in the background
		# where they would compete with an experiment for the throttled device.
		mkfs.ext4 -q -F -L "kura-$name" -E lazy_itable_init=0,lazy_journal_init=0 "$loop" ||
			die "mkfs.ext4 failed on $loop"
	elif [[ $(blkid -p -o value -s TYPE "$loop" 2>/dev/null) != ext4 ]]; then
		die "$img exists but holds no ext4 filesystem; remove it or run '$PROG down --purge'"
	fi
	# blk-throttle counts every request, sequential or not; large read-ahead
	# requests let sequential reads reach the bandwidth limit under the HDD's
	# 200 IOPS (a real disk does not seek between sequential requests).
	put "/sys/block/$dev/queue/read_ahead_kb" "$READ_AHEAD_KB"
	# The seek model is the limit: no throttle on top of it.
	if [[ $model == seek ]]; then cg_clear_limits "$mm"; else cg_apply_limits "$mm" "$kind"; fi
	mkdir -p "$mnt"
	local src
	src=$(findmnt -rn -o SOURCE --mountpoint "$mnt" 2>/dev/null || true)
	if [[ -z $src ]]; then
		mount -t ext4 "$loop" "$mnt" || die "cannot mount $loop at $mnt"
	elif [[ $src != "$loop" ]]; then
		die "$mnt is already a mount point of $src"
	fi
	if [[ $model == seek ]]; then
		echo "$name: $kind on $loop ($mm) at $mnt, $(du -h --apparent-size "$img" | cut -f1) image, seek model (access $HDD_ACCESS) through $backing"
	else
		echo "$name: $kind on $loop ($mm) at $mnt, $(du -h --apparent-size "$img" | cut -f1) image, limits: $(cg_show_limits "$mm")"
	fi
}

# down_disk NAME unmounts, unthrottles and detaches one disk; safe to repeat.
down_disk() {
	local name=$1 st loop mm mnt t
	st=$(disk_state "$name")
	local loops=()
	mapfile -t loops < <({
		kv_get "$st" loop
		disk_loops "$name"
	} | awk 'NF && !seen[$0]++')
	mnt=$(kv_get "$st" mount)
	[[ -n $mnt ]] || mnt=$MOUNT_ROOT/kura-$name
	local backing
	backing=$(disk_backing "$name")
	for loop in "${loops[@]}"; do
		[[ -b $loop ]] || continue
		# Only a loop still attached to our image is ours to unmount.
		loop_backed_by "$loop" "$backing" || continue
		while read -r t; do
			[[ -n $t ]] || continue
			umount "$t" || die "cannot unmount $t (busy? see: fuser -vm $t)"
		done < <(findmnt -rn -o TARGET --source "$loop" 2>/dev/null || true)
	done
	# Clear the limits recorded by `up` and those of any loop still attached.
	for mm in $(kv_get "$st" majmin) $(for loop in "${loops[@]}"; do
		[[ -e /sys/block/${loop##*/}/dev ]] && cat "/sys/block/${loop##*/}/dev"
	done); do
		cg_clear_limits "$mm"
	done
	for loop in "${loops[@]}"; do
		if loop_backed_by "$loop" "$backing"; then
			losetup -d "$loop" || die "cannot detach $loop"
		fi
	done
	# A loop device lets go of its file in the background after detaching.
	local tries=50
	while ((tries-- > 0)) && [[ -n $(loops_backed_by "$backing") ]]; do sleep 0.1; done
	slowdisk_down "$name"
	rmdir "$mnt" 2>/dev/null || true
	rm -f "$st"
	echo "$name: down"
}

# known_disks prints the disks recorded in the state directory plus the
# configured ones, so that `down` finds disks even if KURA_EMU_DISKS changed.
known_disks() {
	{
		local f
		for f in "$STATE_DIR"/*.state "$STATE_DIR"/*.img; do
			[[ -e $f ]] || continue
			f=${f##*/}
			echo "${f%.*}"
		done
		# shellcheck disable=SC2086 # DISKS is a list of words
		printf '%s\n' $DISKS
	} | awk 'NF && !seen[$0]++'
}

lock_state() {
	mkdir -p "$STATE_DIR"
	chmod 700 "$STATE_DIR"
	exec 9>"$STATE_DIR/.lock"
	flock -w 30 9 || die "another $PROG holds $STATE_DIR/.lock"
}

# ---------------------------------------------------------------------------
# commands

cmd_up() {
	while (($#)); do
		case $1 in
		--disks) DISKS=${2:?}; shift 2 ;;
		--size) SIZE=${2:?}; shift 2 ;;
		--mount-root) MOUNT_ROOT=${2:?}; shift 2 ;;
		--state-dir) STATE_DIR=${2:?}; shift 2 ;;
		*) usage_error "up: unknown argument $1" ;;
		esac
	done
	require_root up
	require_tools losetup mkfs.ext4 blkid mount umount findmnt flock numfmt truncate
	bytes "$SIZE" >/dev/null
	local d
	for d in $DISKS; do disk_kind "$d" >/dev/null; done
	lock_state
	mkdir -p "$STATE_DIR/runs"
	if ! cg_load; then
		cg_detect
		cg_save
	fi
	echo "cgroup $CG_MODE; state in $STATE_DIR"
	for d in $DISKS; do up_disk "$d"; done
	printf 'disks=%s\n' "$DISKS" >"$STATE_DIR/config"
}

cmd_down() {
	local purge=0
	while (($#)); do
		case $1 in
		--purge) purge=1; shift ;;
		--state-dir) STATE_DIR=${2:?}; shift 2 ;;
		*) usage_error "down: unknown argument $1" ;;
		esac
	done
	require_root down
	require_tools losetup umount findmnt flock
	if [[ ! -d $STATE_DIR ]]; then
		echo "nothing to do: no $STATE_DIR"
		return 0
	fi
	lock_state
	cg_load || cg_detect
	# Refuse while a run is alive: its files keep the disk busy anyway.
	local r busy=0
	for r in "$STATE_DIR"/runs/*; do
		[[ -e $r ]] || continue
		cg_remove_run "${r##*/}" || busy=1
	done
	((busy)) && die "down: stop the processes above first (nothing was torn down)"
	for r in "$STATE_DIR"/groups/*; do
		[[ -e $r ]] || continue
		cg_remove_group "${r##*/}"
	done
	local d
	for d in $(known_disks); do down_disk "$d"; done
	if [[ $CG_MODE == v2 && -d $(v2_parent) ]]; then
		rmdir "$(v2_parent)" || die "cannot remove cgroup $(v2_parent)"
	fi
	rm -f "$STATE_DIR/cgroup" "$STATE_DIR/config"
	rm -rf "$STATE_DIR/verify"
	if ((purge)); then
		rm -f "$STATE_DIR"/*.img "$STATE_DIR"/kura-slowdisk "$STATE_DIR"/*.slowdisk.log "$STATE_DIR"/*.diskstats
		rm -rf "$STATE_DIR/runs"
		rm -f "$STATE_DIR/.lock"
		rmdir "$STATE_DIR" 2>/dev/null || note "left $STATE_DIR (not empty)"
		echo "purged $STATE_DIR"
	else
		echo "images kept in $STATE_DIR (down --purge deletes them)"
	fi
}

cmd_status() {
	while (($#)); do
		case $1 in
		--state-dir) STATE_DIR=${2:?}; shift 2 ;;
		*) usage_error "status: unknown argument $1" ;;
		esac
	done
	require_root status
	if ! cg_load 2>/dev/null; then
		echo "down (no state in $STATE_DIR)"
		return 0
	fi
	echo "cgroup $CG_MODE; state in $STATE_DIR"
	local d st loop mm mnt mounted dev
	for d in $(known_disks); do
		st=$(disk_state "$d")
		if [[ ! -e $st ]]; then
			echo "$d: down"
			continue
		fi
		loop=$(kv_get "$st" loop)
		mm=$(kv_get "$st" majmin)
		mnt=$(kv_get "$st" mount)
		dev=${loop##*/}
		mounted=no
		findmnt -rn --source "$loop" --mountpoint "$mnt" >/dev/null 2>&1 && mounted=yes
		echo "$d: $(kv_get "$st" kind) $loop ($mm) dio=$(cat "/sys/block/$dev/loop/dio" 2>/dev/null || echo ?)" \
			"read_ahead_kb=$(cat "/sys/block/$dev/queue/read_ahead_kb" 2>/dev/null || echo ?)"
		echo "    mounted at $mnt: $mounted; $(df -h --output=used,size "$mnt" 2>/dev/null | tail -n 1 | awk '{print $1 " used of " $2}')"
		if [[ $(kv_get "$st" model) == seek ]]; then
			echo "    seek model: $(disk_backing "$d"), server pid $(cat "$STATE_DIR/$d.slowdisk.pid" 2>/dev/null || echo ?); $(cat "$STATE_DIR/$d.diskstats" 2>/dev/null)"
		else
			echo "    limits: $(cg_show_limits "$mm")"
		fi
		if [[ $CG_MODE == v1 ]]; then
			echo "    I/Os through the root blkio cgroup since the loop device was created: $(awk -v d="$mm" '$1 == d && ($2 == "Read" || $2 == "Write") { printf "%s %s ", $2, $3 }' "$BLKIO_ROOT/blkio.throttle.io_serviced" 2>/dev/null)"
		fi
	done
	local r dir
	for r in "$STATE_DIR"/runs/*; do
		[[ -e $r ]] || continue
		while read -r dir; do
			[[ -d $dir ]] || continue
			local lim use
			if [[ $CG_MODE == v1 ]]; then
				lim=$(<"$dir/memory.limit_in_bytes") use=$(<"$dir/memory.usage_in_bytes")
			else
				lim=$(<"$dir/memory.max") use=$(<"$dir/memory.current")
			fi
			echo "run ${r##*/}: $dir memory $(human "$use") of $(human "$lim"), pids: $(tr '\n' ' ' <"$dir/cgroup.procs")"
		done <"$r"
	done
	# A loop-device rule that is not ours means a leftover or another user.
	if [[ $CG_MODE == v1 ]]; then
		local ours
		ours=$(for d in $(known_disks); do kv_get "$(disk_state "$d")" majmin; done | tr '\n' ' ')
		awk -v ours=" $ours " '$1 ~ /^7:/ && index(ours, " " $1 " ") == 0 { print "    other loop-device limit: " FILENAME ": " $0 }' \
			"$BLKIO_ROOT"/blkio.throttle.*_device 2>/dev/null || true
	fi
}

cmd_limit() {
	local mem="" runs=() group=""
	while (($#)); do
		case $1 in
		--memory) mem=${2:?}; shift 2 ;;
		--group) group=${2:?}; shift 2 ;;
		--state-dir) STATE_DIR=${2:?}; shift 2 ;;
		-*) usage_error "limit: unknown argument $1" ;;
		*) runs+=("$1"); shift ;;
		esac
	done
	[[ -n $mem ]] || usage_error "limit: --memory SIZE is required"
	((${#runs[@]})) || [[ -n $group ]] || usage_error "limit: name the runs (pids of '$PROG run') or a --group"
	require_root limit
	require_tools numfmt
	local membytes r
	membytes=$(bytes "$mem")
	cg_load || die "limit: the emulated disks are not up (run '$PROG up' first)"
	[[ -z $group ]] || cg_set_group_memory "$group" "$membytes"
	for r in "${runs[@]}"; do
		[[ $r =~ ^[0-9]+$ ]] || usage_error "limit: not a pid: $r"
		cg_set_memory "$r" "$membytes"
	done
}

cmd_run() {
	local mem=512M need=()
	RUN_GROUP=""
	while (($#)); do
		case $1 in
		--memory) mem=${2:?}; shift 2 ;;
		--group) RUN_GROUP=${2:?}; shift 2 ;;
		--disk) need+=("${2:?}"); shift 2 ;;
		--state-dir) STATE_DIR=${2:?}; shift 2 ;;
		--) shift; break ;;
		*) usage_error "run: unknown argument $1 (put the command after --)" ;;
		esac
	done
	(($#)) || usage_error "run: no command (usage: $PROG run [--memory SIZE] [--disk NAME] -- COMMAND...)"
	require_root run
	require_tools numfmt
	local membytes
	membytes=$(bytes "$mem")
	cg_load || die "run: the emulated disks are not up (run '$PROG up' first)"
	local d mnt
	for d in "${need[@]}"; do
		disk_kind "$d" >/dev/null
		mnt=$(kv_get "$(disk_state "$d")" mount)
		if [[ -z $mnt ]] || ! findmnt -rn --mountpoint "$mnt" >/dev/null 2>&1; then
			die "run: disk $d is not up"
		fi
	done

	cg_sweep_runs
	# Globals, not locals: the EXIT trap runs after this function returned.
	RUN_ID=$$
	mkdir -p "$STATE_DIR/runs"
	trap 'cg_remove_run "$RUN_ID" || note "run $RUN_ID: left cgroups behind; $PROG down removes them"; [[ -z $RUN_GROUP ]] || cg_remove_group "$RUN_GROUP"' EXIT
	cg_create_run "$RUN_ID" "$membytes" "$RUN_GROUP"

	# The command runs as a job of its own (set -m): it keeps SIGINT and SIGQUIT
	# (a script's background jobs ignore them otherwise) and it leads its own
	# process group. This shell forwards INT, TERM and HUP to that group, as a
	# terminal would on Ctrl-C, waits, then removes the cgroups. The child joins the cgroups before exec, so every
	# thread and child of the command is inside them from the start.
	set -m
	(
		for f in "${RUN_PROCS[@]}"; do
			printf '%s\n' "$BASHPID" >"$f" || { echo "$PROG: cannot join $f" >&2; exit 126; }
		done
		exec "$@"
	) &
	RUN_CHILD=$!
	set +m
	local rc=0
	trap 'kill -INT -- "-$RUN_CHILD" 2>/dev/null || true' INT
	trap 'kill -TERM -- "-$RUN_CHILD" 2>/dev/null || true' TERM
	trap 'kill -HUP -- "-$RUN_CHILD" 2>/dev/null || true' HUP
	# wait returns early when a trapped signal arrives; wait again until the
	# command is gone.
	wait "$RUN_CHILD" || rc=$?
	while kill -0 "$RUN_CHILD" 2>/dev/null; do
		rc=0
		wait "$RUN_CHILD" || rc=$?
	done
	trap - INT TERM HUP
	return "$rc"
}

# ---------------------------------------------------------------------------
# verify: fio inside vs outside the emulation

# fio_job NAME prints the fio arguments of one verify job.
fio_job() {
	case $1 in
	rr_qd16) echo "--rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=16" ;;
	rr_qd1) echo "--rw=randread --bs=4k --direct=1 --ioengine=psync --iodepth=1" ;;
	rr_buf) echo "--rw=randread --bs=4k --direct=0 --ioengine=psync --numjobs=4" ;;
	sr_dir) echo "--rw=read --bs=1M --direct=1 --ioengine=libaio --iodepth=4" ;;
	sr_buf) echo "--rw=read --bs=64k --direct=0 --ioengine=psync" ;;
	sw_dir) echo "--rw=write --bs=1M --direct=1 --ioengine=libaio --iodepth=4" ;;
	sw_buf) echo "--rw=write --bs=64k --direct=0 --ioengine=psync --end_fsync=1" ;;
	fsw) echo "--rw=randwrite --bs=4k --direct=0 --ioengine=psync --fsync=1" ;;
	esac
}
VERIFY_JOBS="rr_qd16 rr_qd1 rr_buf sr_dir sr_buf sw_dir sw_buf fsw"

# fio_field JOB TERSE prints the figure a job is judged by: IOPS for random
# jobs, MB/s (10^6 bytes) for sequential ones, "p50/p99 ms" for rr_qd1.
fio_field() {
	awk -F';' -v job="$1" '{
		if (job == "rr_qd1") {
			p50 = p99 = "?"
			for (i = 18; i <= 37; i++) {
				split($i, kv, "=")
				if (kv[1] == "50.000000%") p50 = kv[2] / 1000
				if (kv[1] == "99.000000%") p99 = kv[2] / 1000
			}
			printf "%.2f / %.2f", p50, p99
		} else if (job ~ /^rr_/) printf "%.0f", $8
		else if (job == "fsw") printf "%.0f", $49
		else if (job ~ /^sr_/) printf "%.0f", $7 * 1024 / 1e6
		else printf "%.0f", $48 * 1024 / 1e6
	}' <<<"$2"
}

cmd_verify() {
	local mem=64M vsize=256M runtime=3
	while (($#)); do
		case $1 in
		--memory) mem=${2:?}; shift 2 ;;
		--size) vsize=${2:?}; shift 2 ;;
		--runtime) runtime=${2:?}; shift 2 ;;
		--state-dir) STATE_DIR=${2:?}; shift 2 ;;
		*) usage_error "verify: unknown argument $1" ;;
		esac
	done
	require_root verify
	require_tools fio numfmt findmnt
	bytes "$mem" >/dev/null
	bytes "$vsize" >/dev/null
	[[ $runtime =~ ^[0-9]+$ ]] || usage_error "verify: --runtime takes whole seconds"
	cg_load || die "verify: the emulated disks are not up (run '$PROG up' first)"
	export KURA_EMU_STATE_DIR=$STATE_DIR

	# Targets: the raw disk that holds the images (outside the emulation), then
	# the first hdd and ssd disks (inside).
	local targets=("raw:$STATE_DIR/verify") d st
	for d in $(known_disks); do
		st=$(disk_state "$d")
		[[ -e $st ]] || continue
		case $(kv_get "$st" kind) in
		hdd) [[ " ${targets[*]} " == *" hdd:"* ]] || targets+=("hdd:$(kv_get "$st" mount)/.kura-verify") ;;
		ssd) [[ " ${targets[*]} " == *" ssd:"* ]] || targets+=("ssd:$(kv_get "$st" mount)/.kura-verify") ;;
		esac
	done
	mkdir -p "$STATE_DIR/verify"

	# Absolute file names only: fio resolves --filename before a later
	# --directory, which would silently put the file in the current directory.
	local common=(--name=kura-verify --size="$vsize"
		--runtime="$runtime" --time_based --group_reporting --percentile_list=50:99
		--output-format=terse --terse-version=3)
	echo "fio $(fio --version); file $vsize; ${runtime}s per job; buffered jobs in a $mem memory cgroup"
	echo "raw = $(df --output=source "$STATE_DIR" | tail -n 1) ($STATE_DIR), outside the emulation"
	local header="| target | 4k randread IOPS (direct, QD16) | 4k randread p50 / p99 ms (QD1) | 4k randread IOPS (buffered, 4 threads) | seq read MB/s (direct 1M) | seq read MB/s (buffered 64k) | seq write MB/s (direct 1M) | seq write MB/s (buffered 64k + final fsync) | 4k write+fsync /s |"
	local rows=() t kind dir job args out row
	for t in "${targets[@]}"; do
		kind=${t%%:*} dir=${t#*:}
		mkdir -p "$dir"
		local wrap=()
		[[ $kind != raw ]] && wrap=("$SELF" run --memory "$mem" --)
		# Lay the file out once, with direct I/O so the page cache starts empty.
		"${wrap[@]}" fio --name=layout --filename="$dir/kura-verify.dat" --size="$vsize" \
			--rw=write --bs=1M --direct=1 --ioengine=libaio --iodepth=4 --output-format=terse >/dev/null ||
			die "verify: fio layout failed in $dir"
		row="| $kind |"
		for job in $VERIFY_JOBS; do
			read -ra args <<<"$(fio_job "$job")"
			local w=("${wrap[@]}")
			# Buffered jobs always run under the memory limit, also on the raw
			# disk: the page cache is not part of any device.
			[[ $kind == raw && $job =~ _buf$|^fsw$ ]] && w=("$SELF" run --memory "$mem" --)
			out=$("${w[@]}" fio "${common[@]}" --filename="$dir/kura-verify.dat" "${args[@]}") ||
				die "verify: fio job $job failed in $dir"
			row+=" $(fio_field "$job" "$(tail -n 1 <<<"$out")") |"
			echo "  $kind $job: $(fio_field "$job" "$(tail -n 1 <<<"$out")")" >&2
		done
		rows+=("$row")
		rm -rf "$dir"
	done
	echo
	echo "$header"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
	local k ri wi rb wb
	for k in hdd ssd; do
		read -r ri wi rb wb <<<"$(limits "$k")"
		echo "| $k limit | $ri | - | $ri | $((rb / 1000000)) | $((rb / 1000000)) | $((wb / 1000000)) | $((wb / 1000000)) | $wi (write IOPS) |"
	done
	echo
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); loadavg: $(cat /proc/loadavg); kernel $(uname -r); cgroup $CG_MODE"
}

main() {
	local cmd=${1:-help}
	(($#)) && shift
	case $cmd in
	up) cmd_up "$@" ;;
	down) cmd_down "$@" ;;
	status) cmd_status "$@" ;;
	run) cmd_run "$@" ;;
	limit) cmd_limit "$@" ;;
	verify) cmd_verify "$@" ;;
	help | -h | --help) usage ;;
	*) usage_error "unknown command: $cmd" ;;
	esac
}

# Sourcing the script (as its test does) defines the functions only.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
