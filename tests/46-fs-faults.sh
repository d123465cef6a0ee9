#!/bin/bash
# fs-faults: ext4 and XFS on /dev/ssdq0 through every recovery path and
# every way ssdq gives a controller up, as a user's workload meets them.
#   recover   buffered writers with fsync (fio, verifying what they read
#             back) and a file rewritten in place with fsync, while each
#             event of the matrix that a controller recovers from strikes
#             in turn (tests/events.sh: a sysfs reset, an FLR, a CPU going
#             offline, every fault of fault.c but media errors, which reach
#             the filesystem by design), the runtime switches in a
#             different position for each; after each event a new file is
#             written and synced. Then: unmount, the checker finds the
#             filesystem clean, mount again with the caches dropped, and
#             every synced file and the rewritten file's last synced
#             version read back byte for byte.
#   give up   for each way: a disable that fails, a restart that fails, an
#             FLR whose restart fails, a link reset the controller does not
#             come back from (AER), surprise removal, a controller that
#             reads all ones. Closed files' dirty pages are being written
#             back with every completion held (delay_completions), so the
#             give-up meets requests in flight, or parked by the reset it
#             began: it returns, with the hung-task detector on a short
#             timeout nothing blocks, the filesystem sees errors, it
#             unmounts, and the controller binds again (the last path:
#             the module unloads at once).
# The prod lane runs every event and every way of giving up on both
# filesystems. The debug lane (CI's critical path) runs every way of giving
# up, each meeting one of the two filesystems, alternately, and three
# events on ext4, those whose recovery differs most (DEBUG_FS_EVENTS): its
# matrix and events tests already take every event through this kernel's
# checkers. In the PCI Express boot: the link reset needs AER.
# To replay some: SSDQ_FS_EVENTS and SSDQ_FS_GIVE_UPS name the events and
# the ways of giving up to run ("" for none; default: all).
# boot: pcie
# timeout: 1800
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/matrix-cases.sh"
. "$(dirname "$0")/events.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "ssdq-only (its faults are ssdq's debugfs); nothing to do for $DUT"

aer_setup
read -r online </sys/devices/system/cpu/online
HOTCPU=/sys/devices/system/cpu/cpu${online##*-}/online
PCIDEV=/sys/bus/pci/devices/$PCI_DUT
SCALE=${SSDQ_TIMEOUT_SCALE:-1}
TMO=$((2 * SCALE)) # io_timeout and admin_timeout, seconds
# A give-up that waits forever (on writeback parked in a quiesced queue)
# is reported by the hung-task detector within HUNG to 2 x HUNG seconds.
HUNG=$((15 * SCALE))
HUNG0=$(cat /proc/sys/kernel/hung_task_timeout_secs)
mnt=$(mktemp -d /tmp/ssdq-fsf.XXXXXX)
cleanup() {
	# Lazily: after a failure the filesystem may be stuck (its status is
	# not the test's).
	if mountpoint -q "$mnt"; then timeout 10 umount -l "$mnt" || true; fi
	rmdir "$mnt" 2>/dev/null || true
	echo "$HUNG0" >/proc/sys/kernel/hung_task_timeout_secs
}
trap cleanup EXIT
echo "$HUNG" >/proc/sys/kernel/hung_task_timeout_secs

allow_dmesg 'resetting the controller|timed out|completed without an interrupt|not in flight, ignored|reset done|stopping the controller|Doorbell Buffer Config refused|plugging/shadow_doorbells: the controller has none'
allow_dmesg 'I/O error|Buffer I/O error|lost (async )?page write|disabling the controller|does not disable|controller not disabled|stopped responding|device removed|reset failed|PCI error|PCI link'
allow_dmesg 'EXT4-fs|JBD2|jbd2|Aborting journal|XFS \(|Filesystem has been shut down|Please unmount|metadata I/O error|writeback error|log I/O error|xfs_do_force_shutdown'

# Debug lane: each way of giving up meets one filesystem, alternately;
# ext4 alone recovers, from DEBUG_FS_EVENTS.
split=0
((IO_DIV > 1)) && split=1
mine() { # index fs-index
	((!split || $1 % 2 == $2))
}
DEBUG_FS_EVENTS=(reset flr drop_completions)

fs_mount() { mount -t "$1" "$DEV" "$mnt"; }
load_driver() {
	dut_load io_timeout=$TMO admin_timeout=$TMO
	paths
}

# ---- recover

REW=("$(pattern_file rewrite-a.bin "$MiB")" "$(pattern_file rewrite-b.bin "$MiB")")
# Rewrite one file in place, whole, with fsync, until stop-rewrite: the
# pattern last synced is in rewrite.synced.
rewriter() {
	local i=0 p
	while [[ ! -e $T_DIR/stop-rewrite ]]; do
		p=$((i % 2))
		if ! dd if="${REW[p]}" of="$mnt/rewrite" bs=64k conv=notrunc,fsync status=none; then
			echo "rewrite $i failed" >"$T_DIR/rewrite.err"
			return 1
		fi
		echo "$p" >"$T_DIR/rewrite.synced"
		i=$((i + 1))
	done
	echo "$i" >"$T_DIR/rewrite.n"
}
LOAD=$((8 * MiB / IO_DIV)) # per file: 2 jobs x 2 files
start_load() { # tag
	IO_TAG=$1
	rm -f "$T_DIR/stop-rewrite" "$T_DIR/rewrite.err"
	mkdir -p "$mnt/load"
	fio --output-format=json --output="$T_DIR/fio-$1.json" --verify_state_save=0 \
		--name=buffered --directory="$mnt/load" --ioengine=psync --rw=randwrite \
		--bssplit=4k/70:64k/30 --filesize="$LOAD" --nrfiles=2 --numjobs=2 --fsync=4 \
		--verify=crc32c --verify_backlog=16 --verify_fatal=1 --time_based --runtime=3600 \
		2>"$T_DIR/fio-$1.err" &
	lpid=$!
	rewriter &
	rpid=$!
	io_flows
}
stop_load() {
	local rc=0
	touch "$T_DIR/stop-rewrite"
	wait "$rpid" || fail "the rewriter: $(cat "$T_DIR/rewrite.err" 2>/dev/null)"
	ok "the file was rewritten and synced $(cat "$T_DIR/rewrite.n") times"
	kill -INT "$lpid" 2>/dev/null || true
	wait "$lpid" || rc=$?
	((rc != 128)) || rc=0
	fio_check "$IO_TAG" 1 1 "$rc"
}

# The events a controller recovers from (MATRIX_EVENTS but switch_flip,
# rebind, media_errors and fail_disable); refuse_dbbuf last: shadow
# doorbells stay off after it.
FS_EVENTS=(reset flr cpu_offline drop_completions drop_irqs
	delay_completions bad_cids abort_completions retry_completions
	drop_admin_completions fatal_status slow_enable_ms refuse_dbbuf)
chosen() { # list name
	[[ ! -v $1 || " ${!1} " == *" $2 "* ]]
}

recover() { # fs fs-index
	local fs=$1 e ev n=0 f t0=$SECONDS
	local -a sw synced=() events=()
	for e in "${!FS_EVENTS[@]}"; do
		chosen SSDQ_FS_EVENTS "${FS_EVENTS[e]}" || continue
		if ((split)); then
			(($2 == 0)) || continue
			[[ " ${DEBUG_FS_EVENTS[*]} " == *" ${FS_EVENTS[e]} "* ]] || continue
		fi
		events+=("$e")
	done
	((${#events[@]})) || return 0
	load_driver
	fs_mkfs "$fs"
	fs_mount "$fs"
	dd if="${REW[0]}" of="$mnt/rewrite" bs=64k conv=fsync status=none
	echo 0 >"$T_DIR/rewrite.synced"
	start_load "$fs"
	for e in "${events[@]}"; do
		ev=${FS_EVENTS[e]}
		sw=("${MATRIX_IRQ[e % 4]}" "${MATRIX_STEERING[e % 3]}" "${MATRIX_BATCHING[e % 3]}" 1)
		set_switches "${sw[@]}"
		event_begin
		log "$fs: $ev (${sw[*]})"
		event "$ev" "${sw[@]}"
		io_flows
		assert_eq "$fs: controller alive after $ev" "$(rec dead)" 0
		f=$(pattern_file "synced-$ev.bin" $((256 * KiB)))
		dd if="$f" of="$mnt/synced-$ev" bs=64k conv=fsync status=none ||
			fail "$fs: a synced write after $ev failed"
		synced+=("$ev")
		n=$((n + 1))
	done
	stop_load
	umount "$mnt"
	fs_check "$fs"
	echo 3 >/proc/sys/vm/drop_caches
	fs_mount "$fs"
	for ev in "${synced[@]}"; do
		cmp -s "$mnt/synced-$ev" "$(pattern_file "synced-$ev.bin" $((256 * KiB)))" ||
			fail "$fs: the file synced after $ev differs after remount"
	done
	ok "$fs: the $n files synced after each event read back"
	cmp -s "$mnt/rewrite" "${REW[$(cat "$T_DIR/rewrite.synced")]}" ||
		fail "$fs: the rewritten file is not its last synced version after remount"
	ok "$fs: the rewritten file holds its last synced version"
	umount "$mnt"
	dut_unload
	log "$fs: $n events in $((SECONDS - t0)) s"
}

# ---- give up

bound() { [[ -e /sys/bus/pci/drivers/ssdq/$PCI_DUT ]]; }
unbind() { echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind; }
rebind() {
	echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/bind
	dut_wait_disk
	paths
}
injected() { kv_get "$FAULT/injected" "$1"; }
dead() { bound && [[ $(rec dead) == 1 ]]; }
recovery_failed() { [[ $(dmesg_raw_since "$1") == *"device recovery failed"* ]]; }

# Start one way of giving up, in the background (sets gpid); returns once
# it is under way.
give_up_start() { # how tag
	case $1 in
	no_disable)
		echo 1 >"$FAULT/fail_disable"
		(echo 1 >"$SYS/recovery/reset") 2>/dev/null &
		;;
	no_restart)
		# The restart's first admin command never completes.
		echo 1 >"$FAULT/drop_admin_completions"
		(echo 1 >"$SYS/recovery/reset") 2>/dev/null &
		;;
	flr_no_restart)
		echo 1 >"$FAULT/drop_admin_completions"
		(echo 1 >"$PCIDEV/reset") 2>/dev/null &
		;;
	link_reset)
		echo 1 >"$FAULT/fail_disable"
		aer_inject "$MALF_TLP" || fail "aer_inject failed"
		(wait_until $((60 * SCALE)) recovery_failed "$2") &
		;;
	surprise_removal)
		echo 1 >"$FAULT/gone"
		(unbind) &
		;;
	all_ones)
		# The writeback's held requests time out on a controller that
		# reads all ones: the timeout resets it, the disable fails.
		echo 1 >"$FAULT/gone"
		(wait_until $((60 * SCALE)) dead) &
		;;
	esac
	gpid=$!
}
GIVE_UPS=(no_disable no_restart flr_no_restart link_reset surprise_removal all_ones)

give_up() { # fs fs-index how last
	local fs=$1 how=$3 tag=giveup-$1-$3 d0 spid
	bound || rebind
	fs_mkfs "$fs"
	fs_mount "$fs"
	# Closed files with dirty pages: the writeback that sync starts.
	fio --name=dirty --directory="$mnt" --ioengine=psync --rw=write --bs=64k \
		--nrfiles=32 --filesize=$((256 * KiB / IO_DIV)) --output=/dev/null ||
		fail "$fs: writing the files failed"
	echo 60000 >"$FAULT/delay_ms"
	d0=$(injected delayed_completions)
	echo 1000000 >"$FAULT/delay_completions"
	sync &
	spid=$!
	held() { (($(injected delayed_completions) > d0)); }
	wait_for 30 "$fs: writeback with its completions held" held
	kmsg_mark "$tag"
	give_up_start "$how" "$tag"
	gone() { ! kill -0 "$1" 2>/dev/null; }
	wait_until $((2 * HUNG + 10)) gone "$gpid" ||
		fail "$fs, $how: giving up did not return in $((2 * HUNG + 10)) s (hung?)"
	wait "$gpid" || true
	ok "$fs, $how: giving up returned"
	if bound; then
		assert_eq "$fs, $how: controller dead" "$(rec dead)" 1
		echo 0 >"$FAULT/delay_completions"
	fi
	wait_for 30 "$fs, $how: sync to return" gone "$spid"
	wait "$spid" || true
	if sync -f "$mnt" 2>/dev/null; then
		fail "$fs, $how: syncfs succeeded with the disk given up"
	fi
	ok "$fs, $how: syncfs reports the failed writeback"
	timeout $((30 * SCALE)) umount "$mnt" || fail "$fs, $how: umount failed or hung"
	ok "$fs, $how: unmounted"
	if (($4)); then
		dut_unload
		ok "$fs, $how: the module unloaded"
	else
		bound && unbind
		rebind
		assert_eq "$fs, $how: controller alive after a rebind" "$(rec dead)" 0
	fi
}

FS=(ext4 xfs)
for i in "${!FS[@]}"; do
	recover "${FS[i]}" "$i"
done
cases=()
for g in "${!GIVE_UPS[@]}"; do
	chosen SSDQ_FS_GIVE_UPS "${GIVE_UPS[g]}" || continue
	for i in "${!FS[@]}"; do
		mine "$g" "$i" && cases+=("$i ${GIVE_UPS[g]}")
	done
done
load_driver
t0=$SECONDS
for c in "${!cases[@]}"; do
	read -r i g <<<"${cases[c]}"
	give_up "${FS[i]}" "$i" "$g" $((c + 1 == ${#cases[@]}))
done
log "${#cases[@]} ways of giving up in $((SECONDS - t0)) s"
