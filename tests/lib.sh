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

DUT=${DUT:-ssdq}
PCI_DUT=0000:00:04.0 # serial ssdq0, image ssdq0.img
PCI_REF=0000:00:05.0 # serial nvmeref, image nvmeref.img, always nvme
KiB=1024
MiB=$((1024 * 1024))

# Layout of the DUT namespace (512 MiB). Every test that writes has its own
# region, so data a later host post-check reads is never overwritten.
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
REG_KEEP_OFF=$((320 * MiB)) # unbind test: data written before the load
REG_KEEP_LEN=$((4 * MiB))
REG_UNBIND_OFF=$((384 * MiB))
REG_UNBIND_LEN=$((128 * MiB))

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

# Declare a dmesg line (extended regex) as expected for this test. Without
# that, run-guest.sh fails the test on any WARNING/BUG/Oops/Call Trace/
# hung_task line or any warning-or-worse line mentioning the DUT.
allow_dmesg() {
	[[ -n ${T_DIR:-} ]] && printf '%s\n' "$1" >>"$T_DIR/allow"
	return 0
}

# ------------------------------------------------------------------ waits

# wait_for SECS DESCRIPTION CMD...: poll CMD until it succeeds; fail the
# test after SECS. Never a fixed sleep.
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	until "$@"; do
		((SECONDS < end)) || fail "timed out after ${secs}s waiting for $what"
		sleep 0.1
	done
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
DUT_KO=${SSDQ_REPO:-.}/ssdq.ko

# Pin each controller to its driver: nothing auto-binds here (no udev), but
# make it explicit so loading nvme can never grab the ssdq controller.
set_overrides() {
	echo "$DUT_DRV" >/sys/bus/pci/devices/$PCI_DUT/driver_override
	echo nvme >/sys/bus/pci/devices/$PCI_REF/driver_override
}

dut_loaded() { [[ -d /sys/module/$DUT_MOD ]]; }

# Name of the disk below a PCI device, or nothing.
disk_of_pci() { # pci
	local b
	for b in /sys/block/*; do
		[[ -e $b ]] || continue
		case $(readlink -f "$b") in
		*/"$1"/*) echo "${b##*/}"; return 0 ;;
		esac
	done
	return 1
}

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

# Deallocate Logical Block Features of the device model: bits 2:0 = 001b
# means deallocated blocks read back as zeroes.
device_dlfeat() {
	local ctrl
	if [[ $DUT == nvme ]]; then
		ctrl=$(basename "$(readlink -f "/sys/block/$DISK/device")")
		nvme id-ns "/dev/$ctrl" -n 1 -o json | jq -r .dlfeat
	else
		ref_load
		nvme id-ns "/dev/$REF_CTRL" -n 1 -o json | jq -r .dlfeat
	fi
}

sysq() { cat "/sys/block/$DISK/queue/$1"; }

# ----------------------------------------------------------------- data

# Random data of LEN bytes, made once per boot in the results dir (the host
# may pre-create pattern.bin for the persistence check).
pattern_file() { # name len
	local f=$SSDQ_OUT/$1
	if [[ ! -s $f ]]; then
		head -c "$2" /dev/urandom >"$f.tmp" && mv "$f.tmp" "$f"
	fi
	[[ $(stat -c %s "$f") -ge $2 ]] || fail "$f shorter than $2"
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
	local json=$T_DIR/fio-$tag.json errf=$T_DIR/fio-$tag.err
	log "fio $tag: $*"
	fio --output-format=json --output="$json" --verify_state_save=0 "$@" 2>"$errf" || rc=$?
	if ((rc != 0)); then
		fail "fio $tag exited $rc: $(grep -v '^$' "$errf" | head -n3 | tr '\n' ' ')"
	fi
	if grep -Eqi 'verify|bad magic|crc|mismatch' "$errf"; then
		fail "fio $tag: $(grep -Ei 'verify|bad magic|crc|mismatch' "$errf" | head -n2 | tr '\n' ' ')"
	fi
	local errs w r
	# fio may print notes ("multiple writers may overwrite...") before the
	# JSON document in the same file.
	sed -n '/^{/,$p' "$json" >"$json.clean"
	json=$json.clean
	errs=$(jq '[.jobs[].error] | add' "$json") || fail "fio $tag: unreadable JSON output"
	assert_eq "fio $tag job errors" "$errs" 0
	w=$(jq '[.jobs[].write.io_bytes] | add' "$json")
	r=$(jq '[.jobs[].read.io_bytes] | add' "$json")
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
