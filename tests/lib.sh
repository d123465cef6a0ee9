# shellcheck shell=bash disable=SC2034 # constants/vars for the scripts that source this
# Guest-side helpers for the ssdq tests (sourced by every test script), and
# the device layout constants that the host-side post-checks share.
#
# The device under test (DUT) is pluggable so every test can be proven on
# the kernel's own nvme driver first:
#   DUT=ssdq (default): insmod $SSDQ_REPO/ssdq.ko on PCI 00:04.0
#   DUT=nvme:           modprobe nvme on the same kind of controller
# Either way the disk is found through sysfs under the PCI device, so a test
# never hardcodes nvme0n1 vs ssdq0.

# The guest basics this shares with the bench (PCI_DUT, PCI_REF, nap,
# wait_until, kv_get, disk_of_pci, set_override, module_loaded).
# shellcheck source=scripts/guest-lib.sh
. "${BASH_SOURCE[0]%/*}/../scripts/guest-lib.sh"

DUT=${DUT:-ssdq}
KiB=1024
MiB=$((1024 * 1024))

# Layout of the DUT namespace's first 512 MiB. Every test that writes has
# its own region, so data a later host post-check reads is never
# overwritten. The rest of the disk (check.sh makes it 3 GiB) is the long
# discard's (flush-discard).
REG_INTEGRITY_OFF=0
REG_INTEGRITY_LEN=$((128 * MiB))
REG_FLUSH_OFF=$((128 * MiB))
REG_FLUSH_LEN=$((64 * MiB))
REG_DISCARD_OFF=$((192 * MiB)) # 32 MiB: pattern, discard, write zeroes
REG_DISCARD_LEN=$((32 * MiB))
REG_ZERO_OFF=$((REG_DISCARD_OFF + 20 * MiB)) # blkdiscard -z range
REG_ZERO_LEN=$((4 * MiB + 12 * KiB))
REG_PERSIST_OFF=$((256 * MiB + 12 * KiB)) # deliberately not MiB-aligned
REG_PERSIST_LEN=$((16 * MiB))
REG_SHUTDOWN_OFF=$((288 * MiB)) # shutdown: written just before the VM reboots
REG_SHUTDOWN_LEN=$((4 * MiB))
REG_SHUTDOWN_IO_OFF=$((292 * MiB)) # ... and I/O running as it does
REG_SHUTDOWN_IO_LEN=$((28 * MiB))
REG_KEEP_OFF=$((320 * MiB)) # unbind test: data written before the load
REG_KEEP_LEN=$((4 * MiB))
REG_UNBIND_OFF=$((384 * MiB))
REG_UNBIND_LEN=$((128 * MiB))
REG_BIGDISCARD_OFF=$((512 * MiB)) # to the end of the disk

# ---------------------------------------------------------------- results

# run-guest.sh sets T_DIR (per-test scratch in the results dir). fail()
# records the reason there; ok() counts assertions, and a test that made
# none fails: nothing may pass vacuously.
log() { echo "  $*"; }

fail() {
	echo "FAIL: $*"
	[[ -n ${T_DIR:-} ]] && printf '%s\n' "$*" >"$T_DIR/reason"
	exit 1
}

ok() {
	echo "  ok: $*"
	[[ -n ${T_DIR:-} ]] && echo "$*" >>"$T_DIR/asserts"
	return 0
}

# The test does not apply here (e.g. ssdq's own switches, DUT=nvme): it
# reports SKIP with the reason, not a PASS that checked nothing. Exits.
skip() {
	echo "SKIP: $*"
	[[ -n ${T_DIR:-} ]] && printf '%s\n' "$*" >"$T_DIR/skip"
	exit 0
}

assert_eq() { # what got want
	[[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
	ok "$1 = $3"
}

assert_gt() { # what got min
	[[ $2 =~ ^[0-9]+$ ]] || fail "$1: got '$2', want a number > $3"
	(($2 > $3)) || fail "$1: got $2, want > $3"
	ok "$1 = $2 (> $3)"
}

assert_absent() { # path
	[[ ! -e $1 ]] || fail "$1 still exists"
	ok "$1 absent"
}

assert_present() { # path
	[[ -e $1 ]] || fail "$1 missing"
	ok "$1 present"
}

# A string as an extended regex that matches only itself.
re_escape() { sed 's/[][\.*^$()+?{}|]/\\&/g' <<<"$1"; }

# Declare a dmesg line (extended regex) as expected for this test. Without
# that, run-guest.sh fails the test on any WARNING/BUG/Oops/Call Trace/
# hung_task line or any warning-or-worse line mentioning the DUT.
allow_dmesg() {
	[[ -n ${T_DIR:-} ]] && printf '%s\n' "$1" >>"$T_DIR/allow"
	return 0
}

# ----------------------------------------------------------------- amounts

# The debug lane does I/O several times slower (KASAN, lockdep and kmemleak
# on every block-layer allocation and lock, under TCG). Where an amount of
# I/O adds confidence but no coverage (counter samples, verify runs under a
# switch flipper), tests divide it by IO_DIV: check.sh sets SSDQ_IO_DIV=4
# in that lane. Amounts so divided are multiples of 4.
IO_DIV=${SSDQ_IO_DIV:-1}

# ------------------------------------------------------------------ waits

# wait_for SECS DESCRIPTION CMD...: poll CMD until it succeeds; fail the
# test after SECS (times SSDQ_TIMEOUT_SCALE: the debug kernel is slower).
wait_for() {
	local secs=$(($1 * ${SSDQ_TIMEOUT_SCALE:-1})) what=$2
	shift 2
	wait_until "$secs" "$@" || fail "timed out after ${secs}s waiting for $what"
}

# Per-queue debugfs tables (plugging, irq): a header line of column names,
# then one line per queue. Columns are found by name (Documentation/abi.rst),
# never by position, and all in one awk (a process costs on the debug
# kernel): over the I/O queues (qid > 0) but SKIP, each COLUMN's sum, or
# with COLUMN:max its largest value, in order.
queue_cols() { # file skip-qid column[:max]...
	local f=$1 skip=$2
	shift 2
	awk -v want="$*" -v skip="$skip" '
		NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i
			k = split(want, w, " ")
			for (j = 1; j <= k; j++) {
				split(w[j], p, ":"); col[j] = at[p[1]]; op[j] = p[2]
				if (!col[j]) { print "no column " p[1] > "/dev/stderr"; bad = 1; exit 1 }
			}
			next }
		$1 > 0 && $1 != skip { for (j = 1; j <= k; j++) { v = $col[j] + 0
			if (op[j] == "max") { if (v > r[j]) r[j] = v } else r[j] += v } }
		END { if (bad) exit 1
			for (j = 1; j <= k; j++) printf "%s%d", (j > 1 ? " " : ""), r[j]; print "" }' "$f" ||
		fail "$f has no column of: $*"
}

# One queue's line of such a table: the named columns, in order.
queue_row() { # file qid column...
	local f=$1 qid=$2
	shift 2
	awk -v want="$*" -v q="$qid" '
		NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; k = split(want, w, " "); next }
		$1 == q { for (j = 1; j <= k; j++) printf "%s%s", (j > 1 ? " " : ""), $(at[w[j]]); print "" }' "$f"
}

# ------------------------------------------ background writers and events

# Commands ssdq submitted, over its I/O queues (debugfs plugging table).
submitted() { queue_cols "$DBG/plugging" -1 submitted; }

# CQEs reaped on the I/O queues: by the interrupt handler, irq_poll or
# ->poll (debugfs irq table).
reaped() {
	local c p
	read -r c p < <(queue_cols "$DBG/irq" -1 completions polled)
	echo $((c + p))
}

# Random 4 KiB writes at QD16 over 64 MiB from OFF, in the background until
# killed, RUNTIME passes, or their requests fail (a controller given up);
# returns once ssdq sees them. Sets fpid.
busy_writer() { # tag off [runtime]
	local s0
	s0=$(submitted)
	fio --name="$1" --filename="$DEV" --direct=1 --ioengine=io_uring --rw=randwrite \
		--bs=4k --offset="$2" --size=$((64 * MiB)) --iodepth=16 \
		--time_based --runtime="${3:-120}" --output="$T_DIR/$1.out" >/dev/null 2>&1 &
	fpid=$!
	writer_started() { (($(submitted) > s0 + 50)); }
	wait_for 20 "fio $1 to start writing" writer_started
}

# Has the busy writer exited (a zombie counts)?
fio_gone() { ! kill -0 "$fpid" 2>/dev/null || [[ $(ps -o stat= -p "$fpid") == Z* ]]; }

# A controller given up: the device has lost bus mastering, and the busy
# writer exits once its requests fail.
assert_given_up() {
	local cmd
	cmd=$(od -An -tu2 -j4 -N2 "/sys/bus/pci/devices/$PCI_DUT/config" | tr -d ' ')
	(((cmd & 4) == 0)) || fail "bus mastering still on (PCI command $cmd) with the controller given up"
	ok "bus mastering off (PCI command $cmd)"
	wait_for 30 "the writer to exit with its requests failed" fio_gone
	wait "$fpid" || true
	ok "the writer exited"
}

# Run CMD every SECS in the background, an event source beside a verify
# run, until stop_every; that sets EVERY_N to how many ran, and fails the
# test if one failed (unless it failed after stop_every was called: one
# that raced the end of the run counts for nothing).
every() { # secs cmd...
	local secs=$1
	shift
	rm -f "$T_DIR/stop" "$T_DIR/every.n" "$T_DIR/every.err"
	(
		n=0
		while [[ ! -e $T_DIR/stop ]]; do
			nap "$secs"
			[[ -e $T_DIR/stop ]] && break
			if ! "$@"; then
				[[ -e $T_DIR/stop ]] || echo "failed: $*" >"$T_DIR/every.err"
				break
			fi
			n=$((n + 1))
			echo "$n" >"$T_DIR/every.n"
		done
	) &
	every_pid=$!
}
stop_every() {
	touch "$T_DIR/stop"
	wait "$every_pid" || true
	[[ ! -e $T_DIR/every.err ]] || fail "$(cat "$T_DIR/every.err")"
	EVERY_N=0
	[[ ! -e $T_DIR/every.n ]] || read -r EVERY_N <"$T_DIR/every.n"
}

# ------------------------------------------------------------ filesystems

# A filesystem on the whole DUT: ext4 or xfs. The kernel's own
# request_module() runs the initramfs's modprobe, not the one of the
# userland the tests run in (the debug kernel has both built in).
fs_mkfs() { # fs
	grep -qw "$1" /proc/filesystems || modprobe "$1" || fail "modprobe $1 failed"
	case $1 in
	ext4) mkfs.ext4 -F -q "$DEV" ;;
	xfs) mkfs.xfs -f -q "$DEV" ;;
	esac
	ok "mkfs.$1 on $DEV"
}

# The checker, read-only, on the unmounted filesystem: clean, or fail.
fs_check() { # fs
	local out
	case $1 in
	ext4) out=$(fsck.ext4 -fn "$DEV" 2>&1) || fail "fsck.ext4 -fn: $(tail -n2 <<<"$out" | tr '\n' ' ')" ;;
	xfs) out=$(xfs_repair -n "$DEV" 2>&1) || fail "xfs_repair -n: $(tail -n2 <<<"$out" | tr '\n' ' ')" ;;
	esac
	ok "$1: the checker finds the filesystem clean after unmount"
}

# ------------------------------------------------------------ PCI errors

# The PCI Express boot (vm.sh --pcie): the root port above the DUT, its AER
# driver, and aer_inject to make the port report an error as a real link
# error would. Sets AER_PORT (its address) and AER_BDF (bus dev fn).
aer_setup() {
	local port
	port=$(readlink -f "/sys/bus/pci/devices/$PCI_DUT/..")
	port=${port##*/}
	[[ $port =~ ^[0-9a-f]{4}:([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$ ]] ||
		fail "no PCI Express root port above $PCI_DUT (this test needs vm.sh --pcie)"
	AER_PORT=$port
	AER_BDF="$((16#${BASH_REMATCH[1]})) $((16#${BASH_REMATCH[2]})) ${BASH_REMATCH[3]}"
	assert_present "/sys/bus/pci/devices/$port/aer_rootport_total_err_fatal"
	modprobe aer_inject || fail "modprobe aer_inject failed (CONFIG_PCIEAER_INJECT)"
	ok "root port $port has AER; aer_inject loaded"
}

# Have the root port report an uncorrectable error (struct aer_error_inj:
# bus, dev, fn, then the uncorrectable status bits). Severity follows the
# port's severity register: Malformed TLP (bit 18) is fatal by default,
# Unsupported Request (bit 20) non-fatal.
MALF_TLP=$((1 << 18)) UNSUP_REQ=$((1 << 20))
aer_inject() { # uncor-status
	# shellcheck disable=SC2086 # AER_BDF: three numbers
	python3 -c '
import os, struct, sys
b, d, f, unc = (int(x) for x in sys.argv[1:])
fd = os.open("/dev/aer_inject", os.O_WRONLY)
os.write(fd, struct.pack("<BBBxIIIIIII", b, d, f, unc, 0, 0, 0, 0, 0, 0))
' $AER_BDF "$1"
}

# ---------------------------------------------------------------- kmsg

# Mark the kernel log so a test can look at what it caused.
kmsg_mark() { # tag
	echo "ssdqtest: mark $1" >/dev/kmsg
}

# Messages (text only) logged after the last "mark TAG".
dmesg_since() { # tag
	dmesg -r | awk -v m="ssdqtest: mark $1" '
		index($0, m) { n = NR; delete buf; next }
		{ buf[NR] = $0 }
		END { for (i = n + 1; i <= NR; i++) if (i in buf) print buf[i] }' |
		sed -E 's/^<[0-9]+>(\[ *[0-9.]+\] )?//'
}

# ------------------------------------------------------------------- DUT

case $DUT in
ssdq)
	DUT_MOD=ssdq
	DUT_DRV=ssdq
	;;
nvme)
	DUT_MOD=nvme
	DUT_DRV=nvme
	;;
*)
	echo "unknown DUT=$DUT (ssdq or nvme)" >&2
	exit 2
	;;
esac
# The debug lane builds its own ssdq.ko against the debug kernel.
DUT_KO=${SSDQ_KO:-${SSDQ_REPO:-.}/ssdq.ko}

# Pin each controller to its driver: nothing auto-binds here (no udev), but
# make it explicit so loading nvme can never grab the ssdq controller.
set_overrides() {
	local p
	set_override "$PCI_DUT" "$DUT_DRV"
	set_override "$PCI_REF" nvme
	# vm.sh --namespaces: 87-namespaces gives these their drivers.
	for p in "$PCI_MULTI" "$PCI_NS2ONLY" "$PCI_ODD"; do
		[[ -e /sys/bus/pci/devices/$p/driver || ! -e /sys/bus/pci/devices/$p ]] ||
			set_override "$p" none
	done
}

dut_loaded() { module_loaded "$DUT_MOD"; }

# Try to load the DUT driver with parameters; returns the loader's status
# and leaves its stderr in $T_DIR/load.err (or /tmp).
dut_try_load() {
	local err=${T_DIR:-/tmp}/load.err
	set_overrides
	if [[ $DUT == ssdq ]]; then
		[[ -f $DUT_KO ]] || fail "$DUT_KO not built"
		insmod "$DUT_KO" "$@" 2>"$err"
	else
		modprobe nvme "$@" 2>"$err"
	fi
}

# Wait for the DUT's disk and set DISK and DEV.
dut_wait_disk() { # [secs]
	local secs=${1:-60}
	wait_for "$secs" "a disk under $PCI_DUT" disk_of_pci "$PCI_DUT" >/dev/null
	DISK=$(disk_of_pci "$PCI_DUT")
	DEV=/dev/$DISK
	wait_for 10 "$DEV" test -b "$DEV"
}

# Load with parameters (must succeed) and wait for the disk.
dut_load() {
	dut_loaded && dut_unload
	dut_try_load "$@" || fail "loading $DUT_MOD $* failed: $(cat "${T_DIR:-/tmp}/load.err")"
	dut_wait_disk 60
	log "$DUT_MOD loaded${*:+ ($*)} -> $DEV"
}

dut_unload() {
	local d=${DISK:-}
	if [[ $DUT == ssdq ]]; then
		rmmod ssdq || fail "rmmod ssdq failed"
	else
		modprobe -r nvme || fail "modprobe -r nvme failed"
	fi
	wait_for 30 "/sys/module/$DUT_MOD to go" test ! -e "/sys/module/$DUT_MOD"
	[[ -z $d ]] || wait_for 30 "/dev/$d to go" test ! -e "/dev/$d"
}

# The reference controller (kernel nvme driver on 00:05.0): used to ask
# the identical QEMU device model things ssdq has no ioctl for.
ref_load() {
	set_overrides
	[[ -d /sys/module/nvme ]] || modprobe nvme || fail "modprobe nvme (reference) failed"
	wait_for 60 "nvme disk under $PCI_REF" disk_of_pci "$PCI_REF" >/dev/null
	REF_DISK=$(disk_of_pci "$PCI_REF")
	REF_CTRL=$(basename "$(readlink -f "/sys/block/$REF_DISK/device")")
}

# The nvme character device of a controller of the DUT's device model: the
# DUT itself under DUT=nvme, else the reference controller (ssdq has no
# ioctl for these questions).
device_ctrl() {
	if [[ $DUT == nvme ]]; then
		basename "$(readlink -f "/sys/block/$DISK/device")"
	else
		ref_load
		echo "$REF_CTRL"
	fi
}

# One field of an nvme-cli identify command's JSON, on the device model.
device_id() { # field nvme-subcommand [args]
	local field=$1 ctrl
	shift
	ctrl=$(device_ctrl) || return 1
	nvme "$@" "/dev/$ctrl" -o json | jq -r ".$field"
}

# Deallocate Logical Block Features: bits 2:0 = 001b means deallocated
# blocks read back as zeroes.
device_dlfeat() { device_id dlfeat id-ns -n 1; }
# DMRSL (Identify Controller, NVM command set): the most blocks one Dataset
# Management range may name, 0 for no limit.
device_dmrsl() { device_id dmrsl nvm-id-ctrl; }
# MDTS: the largest transfer, as a power of two of CAP.MPSMIN pages.
device_mdts() { device_id mdts id-ctrl; }

sysq() { local v; read -r v <"/sys/block/$DISK/queue/$1" && echo "$v"; }

# Fields of a disk's I/O statistics (/sys/block/DISK/stat) by their names
# in the kernel's Documentation/block/stat.rst, in the order asked.
DISK_STAT_FIELDS=(read_ios read_merges read_sectors read_ticks write_ios write_merges
	write_sectors write_ticks in_flight io_ticks time_in_queue discard_ios
	discard_merges discard_sectors discard_ticks flush_ios flush_ticks)
disk_stat() { # disk field...
	local -a stat got=()
	local f i
	read -r -a stat <"/sys/block/$1/stat"
	shift
	for f; do
		for i in "${!DISK_STAT_FIELDS[@]}"; do
			[[ ${DISK_STAT_FIELDS[i]} == "$f" ]] && break
		done
		[[ ${DISK_STAT_FIELDS[i]} == "$f" ]] || fail "no disk stat field $f"
		got+=("${stat[i]}")
	done
	echo "${got[*]}"
}

# ----------------------------------------------------------------- data

# Pseudo-random data of LEN bytes named NAME: the AES-128-CTR keystream
# keyed by the name, so the guest and the host's post-checks make the same
# bytes each on their own. Nothing crosses 9p (0.7 MiB/s on the debug
# kernel), and /dev/urandom (1 MiB/s there) is not read. Made once per boot
# in $PATTERN_DIR (a tmpfs in the guest).
PATTERN_DIR=${PATTERN_DIR:-/tmp/ssdq-patterns}
pattern_file() { # name len -> path
	local f=$PATTERN_DIR/$1 key
	if [[ ! -s $f || $(stat -c %s "$f") -lt $2 ]]; then
		mkdir -p "$PATTERN_DIR"
		key=$(printf '%s' "$1" | sha256sum)
		{ openssl enc -aes-128-ctr -nosalt -K "${key:0:32}" \
			-iv 00000000000000000000000000000000 </dev/zero 2>/dev/null || true; } |
			head -c "$2" >"$f.tmp" && mv "$f.tmp" "$f"
	fi
	[[ $(stat -c %s "$f") -ge $2 ]] || fail "pattern $f shorter than $2 bytes (openssl missing?)"
	echo "$f"
}

# O_DIRECT byte-addressed copy helpers (offsets/lengths LBS multiples).
dev_write() { # file dev off
	dd if="$1" of="$2" bs=1M seek="$3" oflag=direct,seek_bytes conv=fsync,notrunc status=none
}
dev_read() { # dev off len -> stdout
	dd if="$1" bs=1M skip="$2" count="$3" iflag=direct,skip_bytes,count_bytes status=none
}
# cmp the device range against a file (first LEN bytes of it)
dev_cmp() { # dev off len file what
	local out
	out=$(cmp -n "$3" <(dev_read "$1" "$2" "$3") "$4" 2>&1) || fail "$5: data differs: $out"
	ok "$5: $3 bytes at $2 match"
}

# ------------------------------------------------------------------ fio

# run_fio TAG EXPECT_WRITE EXPECT_READ fio-args...: run fio with JSON
# output and fail unless it exits 0, no job reports an error, no verify
# complaint is printed, and the bytes written/read add up to at least the
# expected amounts (so a job that did nothing cannot pass). EXPECT_* of -
# skips that check.
run_fio() {
	local tag=$1 want_w=$2 want_r=$3 rc=0
	shift 3
	log "fio $tag: $*"
	fio --output-format=json --output="$T_DIR/fio-$tag.json" --verify_state_save=0 "$@" \
		2>"$T_DIR/fio-$tag.err" || rc=$?
	fio_check "$tag" "$want_w" "$want_r" "$rc"
}

# Judge a finished fio run (its output in $T_DIR/fio-TAG.json and .err):
# exit status RC 0, no verify complaint, no job error, and at least WANT_W
# bytes written and WANT_R read ("-": any amount). Leaves the JSON alone,
# without fio's notes, in $T_DIR/fio-TAG.json.clean.
fio_check() { # tag want_w want_r rc
	local tag=$1 want_w=$2 want_r=$3 rc=$4
	local json=$T_DIR/fio-$tag.json errf=$T_DIR/fio-$tag.err
	if ((rc != 0)); then
		fail "fio $tag exited $rc: $(grep -v '^$' "$errf" | head -n3 | tr '\n' ' ')"
	fi
	local -a el
	mapfile -t el <"$errf"
	if [[ ${el[*],,} =~ verify|bad\ magic|crc|mismatch ]]; then
		fail "fio $tag: $(grep -Ei 'verify|bad magic|crc|mismatch' "$errf" | head -n2 | tr '\n' ' ')"
	fi
	local errs w r
	# fio may print notes ("multiple writers may overwrite...") before the
	# JSON document in the same file. One jq for all three sums: every
	# process counts on the debug kernel.
	sed -n '/^{/,$p' "$json" >"$json.clean"
	read -r errs w r < <(jq -r '[([.jobs[].error] | add), ([.jobs[].write.io_bytes] | add),
		([.jobs[].read.io_bytes] | add)] | map(tostring) | join(" ")' "$json.clean") ||
		fail "fio $tag: unreadable JSON output"
	assert_eq "fio $tag job errors" "$errs" 0
	log "fio $tag: wrote $w bytes, read $r bytes"
	if [[ $want_w != - ]]; then
		((w >= want_w)) || fail "fio $tag wrote $w bytes, want >= $want_w"
		ok "fio $tag wrote $w bytes"
	fi
	if [[ $want_r != - ]]; then
		((r >= want_r)) || fail "fio $tag read $r bytes, want >= $want_r"
		ok "fio $tag read (verified) $r bytes"
	fi
}

# ------------------------------------------------------ trace events

# ssdq's trace events (drivers/block/ssdq/trace.h), read through tracefs:
# a second witness beside the counters. Both lanes' kernels have event
# tracing (the debug kernel has no function tracer, but keeps events); on
# a kernel without tracefs the tests skip what they would assert from
# events, with a log line.
TRACEFS=/sys/kernel/tracing
have_trace_events() {
	[[ -e $TRACEFS/trace ]] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null || true
	[[ -e $TRACEFS/trace ]] || return 1
	[[ $DUT != ssdq || -d $TRACEFS/events/ssdq ]] ||
		fail "the kernel has tracefs but no ssdq events ($TRACEFS/events/ssdq)"
}

# Record the named ssdq events (or SYSTEM/EVENT) from now on, in an empty
# buffer. Enabling or disabling an event patches its call sites (a static
# key: int3, then IPIs), which QEMU's multi-threaded TCG can leave as a
# stale int3 on a vCPU running through one: an "Oops: int3" (in
# ssdq_prep_rq() when 75-events stopped its recording under fio: once in
# CI, once in 40 runs of it). So both refuse to run while fio does.
# Without task names: recording them (options/record-cmd) hooks
# sched_switch, and every first enable and last disable would patch that
# static key in __schedule() too (an "Oops: int3" there, seen once).
# Without starting a program: one (pgrep) read over 9p takes about a second
# on the debug kernel, which once let 80-recovery's first reset pass before
# its recording started.
trace_quiet() { # what
	local f c
	for f in /proc/[0-9]*/comm; do
		read -r c 2>/dev/null <"$f" || continue
		[[ $c != fio ]] || fail "$1 while fio runs: it patches the events' call sites (lib.sh)"
	done
}

trace_start() { # event...
	local e
	trace_quiet trace_start
	echo 0 >"$TRACEFS/tracing_on"
	echo 0 >"$TRACEFS/options/record-cmd"
	echo 0 >"$TRACEFS/events/enable"
	echo 8192 >"$TRACEFS/buffer_size_kb"
	: >"$TRACEFS/trace"
	for e; do
		[[ $e == */* ]] || e=ssdq/$e # block/block_getrq: another system's
		echo 1 >"$TRACEFS/events/$e/enable" || fail "cannot enable trace event $e"
	done
	echo 1 >"$TRACEFS/tracing_on"
}

# Stop, and keep what was recorded in FILE; every event written must be in
# it (a full buffer would lose some and make the counts meaningless).
trace_stop() { # file
	local hdr
	trace_quiet trace_stop
	echo 0 >"$TRACEFS/tracing_on"
	echo 0 >"$TRACEFS/events/enable"
	cat "$TRACEFS/trace" >"$1"
	hdr=$(grep -m1 'entries-in-buffer/entries-written' "$1") || fail "no trace header in $1"
	[[ $hdr =~ ([0-9]+)/([0-9]+) ]] || fail "unreadable trace header: $hdr"
	[[ ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] ||
		fail "trace buffer lost events: $hdr"
}

# ------------------------------------------------------ kernel checkers
#
# What fails a test whatever the test itself asserted (run-guest.sh applies
# these after every test; the detectors test proves each one fires). On the
# debug kernel (make check-debug) the checkers that print them are on:
# KASAN, lockdep, UBSAN, DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS, the hung-task
# detector; kmemleak is asked explicitly after each test's rmmod.

# Lines every test may cause: loading an unsigned out-of-tree module; and,
# on the debug kernel (acpi=noirq) in the PCI Express boot, the PCI core
# saying once that the device behind the root port takes its legacy
# interrupt by the bridge's swizzle.
GLOBAL_ALLOW='loading out-of-tree module taints kernel|module verification failed: signature and/or required key missing|ssdqtest: (mark|begin)|using bridge .* INT [A-D] to get IRQ'
# A kernel report, from whatever part of the kernel. lockdep's reports start
# "WARNING: possible ...", KASAN's "BUG: KASAN: ...", DEBUG_ATOMIC_SLEEP's
# "BUG: sleeping function called from invalid context"; the rest are named
# for the checker that prints them.
BAD_ANY='WARNING|\<BUG\>|Oops|Call Trace|hung_task|blocked for more than|general protection fault|Kernel panic|UBSAN|KASAN|DEBUG_LOCKS_WARN_ON|INFO: trying to register non-static key|ODEBUG|suspected memory leak|scheduling while atomic|rcu: INFO'

# QEMU 7.2's multi-threaded TCG sometimes hands a vCPU back with EFLAGS
# garbled (TF among them: "EFLAGS: 42ec4b02" in kmem_cache_alloc under
# fio, 4 vCPUs; after an S3 wake, recovery.rst): the kernel then takes a
# single-step #DB it never asked for and says "WARNING: ... at
# arch/x86/kernel/traps.c:... exc_debug_kernel", its trace ending at "---[
# end trace". No kprobe or kgdb is used here, which is all the kernel
# single-steps for, and no driver can set TF: that one report (and only
# it, to its end) is the emulator's, and run-guest.sh notes it in the log.
tcg_db_filter() {
	awk '/WARNING: .* exc_debug_kernel/ { skip = 1 } !skip { print } /---\[ end trace/ { skip = 0 }'
}

# Raw dmesg lines ("<prio>[time] text") on stdin -> text of those that
# break the rules: any kernel report (BAD_ANY), or a warning-or-worse line
# naming the DUT, unless GLOBAL_ALLOW or the patterns in ALLOWFILE match.
# Kernel messages have facility 0, so prio = level 0-7; the tests' own
# /dev/kmsg lines are facility user (prio 8 and up). One pass of greps over
# the whole stream: a KASAN report is hundreds of lines, and a process per
# line costs minutes on the debug kernel under TCG.
dmesg_filter_bad() { # [allowfile]
	local allow=${1:-/dev/null}
	[[ -s $allow ]] || allow=/dev/null
	tcg_db_filter |
		sed -E 's/^<([0-9]+)>(\[ *[0-9.]+\] )?/P\1 /' |
		{ grep -E -e "$BAD_ANY" -e "^P[0-4] .*($DUT_MOD|$DISK_NAME_RE)" || true; } |
		sed -E 's/^P[0-9]+ //' |
		{ grep -Ev -e "$GLOBAL_ALLOW" || true; } |
		{ grep -Ev -f "$allow" || true; }
}
# DUT disks: ssdq0.. or, for DUT=nvme, nvmeXnY.
if [[ $DUT == ssdq ]]; then DISK_NAME_RE='ssdq[0-9]'; else DISK_NAME_RE='nvme[0-9]'; fi

# Raw dmesg lines after the last "ssdqtest: mark TAG".
dmesg_raw_since() { # tag
	dmesg -r | awk -v m="ssdqtest: mark $1" '
		index($0, m) { n = NR; delete buf; next }
		{ buf[NR] = $0 }
		END { for (i = n + 1; i <= NR; i++) if (i in buf) print buf[i] }'
}

KMEMLEAK=/sys/kernel/debug/kmemleak
# kmemleak never reports an object younger than this (MSECS_MIN_AGE).
KMEMLEAK_MIN_AGE=5

have_kmemleak() { [[ -w $KMEMLEAK ]]; }

# Scan for leaks; print kmemleak's report of those not yet cleared, then
# clear them (so each leak is reported once). kmemleak reports an object
# only when it is older than KMEMLEAK_MIN_AGE and its contents did not
# change since the previous scan, so a new leak needs two scans after that
# age. Each scan walks all memory: about 13 s on the debug kernel, 1.5 GiB.
kmemleak_scan() {
	have_kmemleak || return 0
	echo scan >"$KMEMLEAK"
	cat "$KMEMLEAK"
	echo clear >"$KMEMLEAK"
}

# For the detectors test only: leaks of objects allocated while it runs
# are its purpose, not a failure (run-guest.sh's final scan).
expect_leaks() { [[ -n ${T_DIR:-} ]] && : >"$T_DIR/leaks-expected"; }

# For the detectors test only: its KASAN report turns lockdep off on
# purpose (run-guest.sh otherwise fails a test that does).
expect_lockdep_off() { [[ -n ${T_DIR:-} ]] && : >"$T_DIR/lockdep-off-expected"; }

# Number of "unreferenced object" reports in kmemleak_scan output (stdin).
kmemleak_count() { grep -c '^unreferenced object' || true; }

# The kernel's jiffies now (kmemleak dates each object in jiffies).
jiffies_now() { awk '$1 == "jiffies:" { print $2; exit }' /proc/timer_list; }

# lockdep's master switch: 1 while it validates, 0 once it has reported
# something (or hit an internal limit) and turned itself off.
lockdep_on() {
	awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats 2>/dev/null
}
