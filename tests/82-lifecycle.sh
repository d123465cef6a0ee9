#!/bin/bash
# lifecycle: where a reset, a timeout or a mode switch meets another
# technique, no request is completed twice, left stuck, or failed while the
# device can still DMA into it. One case per scenario (Documentation/
# recovery.rst, "The request lifecycle"), each under fio verify, through a
# fault (fault.c) where QEMU cannot produce the device's behaviour:
#   polled + irqpoll queues under resets   no double completion, no stall
#   an Abort the controller honours        the request runs again
#   an error status without DNR            the request runs again
#   a media error (DNR)                    ENODATA at once, its status logged
#   an Abort that is never answered        no wait, no hung task; reset
#   CSTS.CFS at a timeout                  reset at once, no Abort
#   Doorbell Buffer Config refused         back to MMIO doorbells
#   a fatal signal to the sysfs reset      the reset still completes
#   ... and to an FLR's writer             the restart still completes
#   REQ_FAILFAST_* I/O (dm-multipath)      fails on a reset, not requeued
#   function-level resets (FLR)            no timeout, nothing lost
#   unbind in irqpoll with deferral        the timer is stopped first
#   a controller that will not disable     bus mastering off before failing
# timeout: 900
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || {
	skip "ssdq-only (its faults are ssdq's debugfs); nothing to do for $DUT"
}

# The unanswered-Abort case runs the hung-task detector at HUNG seconds, and
# admin_timeout is longer than the detector's longest report time (2 x
# HUNG): a ->timeout that waited for an admin command would be reported.
# io_timeout stays 30 s except where a case needs a timeout: a request
# left stuck then shows up as a timeout (counted) instead of passing
# unnoticed.
SCALE=${SSDQ_TIMEOUT_SCALE:-1}
HUNG=$((6 * SCALE))
ADMIN_TMO=$((2 * HUNG + 5))
HUNG0=$(cat /proc/sys/kernel/hung_task_timeout_secs)
trap 'echo "$HUNG0" >/proc/sys/kernel/hung_task_timeout_secs' EXIT
dut_load poll_queues=1 admin_timeout=$ADMIN_TMO
DBG=/sys/kernel/debug/ssdq/$DISK
FAULT=$DBG/fault
SYS=/sys/block/$DISK
PCIDEV=/sys/bus/pci/devices/$PCI_DUT
allow_dmesg 'resetting the controller|timed out|completed without an interrupt|reset done|stopping the controller|Doorbell Buffer Config refused'

rec() { kv_get "$DBG/recovery" "$1"; }
injected() { kv_get "$FAULT/injected" "$1"; }
# Sum of a named column of a per-queue debugfs table (header first).
col_sum() { # file column
	awk -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) n = i; next }
		n { s += $n } END { print s + 0 }' "$1"
}

SZ=$((32 * MiB / IO_DIV))
# Verified random writes, QD16, mixed sizes; on the polled queue too with
# "both" (two jobs: one --hipri, one interrupt-driven).
verify() { # tag size [both]
	local -a jobs=(--name="$1" --offset="$REG_INTEGRITY_OFF")
	local n=1
	if [[ ${3:-} == both ]]; then
		jobs+=(--hipri=1 --name="$1-irq" --offset=$((REG_INTEGRITY_OFF + 64 * MiB)))
		n=2
	fi
	run_fio "$1" $((n * $2)) $((n * $2)) --filename="$DEV" --direct=1 \
		--ioengine=io_uring --rw=randwrite --bssplit=4k/50:16k/25:128k/25 \
		--size="$2" --iodepth=16 --verify=crc32c "${jobs[@]}"
}

sysfs_reset() { echo 1 >"$SYS/recovery/reset"; }
pci_reset() { echo 1 >"$PCIDEV/reset"; }

# --- 1+2: polled and irqpoll queues under resets. A polled request is
# marked complete by the poller that reaps it, so a reset's cancel cannot
# complete it again; irq_poll is enabled before the vector, so an interrupt
# replayed at resume cannot leave the vector masked with nobody polling.
echo irqpoll >"$SYS/irq/mode"
echo 200 >"$SYS/irq/defer_us"
t0=$(rec timeouts) r0=$(rec resets) p0=$(col_sum "$DBG/irq" polled)
every 0.4 sysfs_reset
verify polled-irqpoll-resets $((2 * SZ)) both
stop_every
assert_gt "resets during polled + irqpoll I/O" "$EVERY_N" 1
assert_eq "resets counted" "$(($(rec resets) - r0))" "$EVERY_N"
assert_gt "completions reaped by ->poll" "$(($(col_sum "$DBG/irq" polled) - p0))" 0
assert_eq "timeouts (a stalled queue or stuck request)" "$(($(rec timeouts) - t0))" 0

# --- 8: function-level resets under verified I/O, polled and irqpoll
# queues busy: the driver is told (reset_prepare/reset_done), takes its
# requests back before and runs them after; none waits for a timeout.
t0=$(rec timeouts) pr0=$(rec pci_resets)
every 0.4 pci_reset
verify flr $((2 * SZ)) both
stop_every
assert_gt "function-level resets during I/O" "$EVERY_N" 0
assert_eq "PCI resets seen by ssdq" "$(($(rec pci_resets) - pr0))" "$EVERY_N"
assert_eq "timeouts across FLRs" "$(($(rec timeouts) - t0))" 0
assert_eq "controller alive" "$(rec dead)" 0

# --- 3 and 9: the device fails commands with a status worth retrying:
# "Command Abort Requested" (what an honoured Abort leaves) and "Namespace
# Not Ready" without DNR. Each runs again at once, without a timeout.
echo direct >"$SYS/irq/mode"
# Four in all: even if one request took them all (it may be alone in
# flight), it would still be under its five retries.
t0=$(rec timeouts) r0=$(rec resets) q0=$(rec retried)
echo 2 >"$FAULT/abort_completions"
echo 2 >"$FAULT/retry_completions"
verify retryable $((SZ / 2))
assert_eq "completions made aborted" "$(injected aborted_completions)" 2
assert_eq "completions made not-ready" "$(injected retry_completions)" 2
assert_eq "requests run again" "$(($(rec retried) - q0))" 4
assert_eq "timeouts for retryable errors" "$(($(rec timeouts) - t0))" 0
assert_eq "resets for retryable errors" "$(($(rec resets) - r0))" 0

# --- A final error (DNR) ends the request at once with its errno, and one
# dmesg line names the NVMe status: a media error is ENODATA to the reader
# ("No data available"), not a generic EIO, and is not retried.
q0=$(rec retried)
lba=$(((REG_INTEGRITY_OFF + 20 * KiB) / 512))
kmsg_mark media
media_error() { # tag dd-args...
	local tag=$1 out
	shift
	echo 1 >"$FAULT/media_errors"
	if out=$(dd bs=4k count=1 "$@" 2>&1); then
		fail "$tag with a media error succeeded"
	fi
	grep -q 'No data available' <<<"$out" || fail "$tag with a media error: $out (want ENODATA)"
}
media_error read if="$DEV" of=/dev/null skip=$((lba / 8)) iflag=direct
media_error write if=/dev/zero of="$DEV" seek=$((lba / 8)) oflag=direct
assert_eq "completions made media errors" "$(injected media_errors)" 2
assert_eq "media errors run again" "$(($(rec retried) - q0))" 0
allow_dmesg 'failed: NVMe status|critical medium error'
media_lines() { # op status
	dmesg_since media | grep -Fc ": $1 of 4096 bytes at sector $lba failed: NVMe status $2" || true
}
assert_eq "dmesg lines naming the read's status" "$(media_lines READ '0x4281 (Unrecovered Read Error, DNR)')" 1
assert_eq "dmesg lines naming the write's status" "$(media_lines WRITE '0x4280 (Write Fault, DNR)')" 1

# --- 7: the Abort for a lost completion is never answered. ->timeout does
# not wait for it (blk-mq's timeout work serves every request of the disk):
# the request's next expiry resets, from the escalation work. No admin
# command times out, and the hung-task detector, at HUNG seconds, finds
# nothing blocked; the ssdq whose ->timeout waited for the Abort slept
# ADMIN_TMO (more than 2 x HUNG) in it: "blocked for more than".
echo 1000 >"$SYS/queue/io_timeout"
r0=$(rec resets) a0=$(rec aborts) at0=$(rec admin_timeouts)
echo "$HUNG" >/proc/sys/kernel/hung_task_timeout_secs
kmsg_mark abort-unanswered
echo 1 >"$FAULT/drop_admin_completions"
echo 1 >"$FAULT/drop_completions"
verify abort-unanswered $((SZ / 2))
echo "$HUNG0" >/proc/sys/kernel/hung_task_timeout_secs
assert_eq "admin completions dropped (the Abort's)" "$(injected dropped_admin_completions)" 1
assert_eq "admin timeouts" "$(($(rec admin_timeouts) - at0))" 0
assert_eq "aborts sent" "$(($(rec aborts) - a0))" 1
assert_gt "resets after the unanswered Abort" "$(($(rec resets) - r0))" 0
assert_eq "controller alive" "$(rec dead)" 0
blocked=$(dmesg_since abort-unanswered | grep -c 'blocked for more than' || true)
assert_eq "tasks the hung-task detector found blocked ($HUNG s)" "$blocked" 0

# --- 9: a timeout that finds CSTS.CFS resets at once: no Abort is sent.
r0=$(rec resets) a0=$(rec aborts) f0=$(rec fatal_status)
echo 1 >"$FAULT/fatal_status"
echo 1 >"$FAULT/drop_completions"
verify fatal-status $((SZ / 2))
assert_eq "fatal status seen by the timeout" "$(($(rec fatal_status) - f0))" 1
assert_eq "aborts sent to a controller in fatal status" "$(($(rec aborts) - a0))" 0
assert_gt "resets for fatal status" "$(($(rec resets) - r0))" 0
echo 30000 >"$SYS/queue/io_timeout"

# --- 6: a fatal signal to the process that asked for a reset. The reset
# runs in a work item: the controller comes back (slow_enable_ms keeps the
# enable, and so the reset, going for 2 s: the kill lands in it).
r0=$(rec resets)
echo 2000 >"$FAULT/slow_enable_ms"
(sysfs_reset 2>/dev/null) &
wpid=$!
reset_started() { (($(rec resets) > r0)); }
wait_for 20 "the sysfs reset to start" reset_started
kill -9 "$wpid" 2>/dev/null || true
writer_gone() { ! kill -0 "$wpid" 2>/dev/null; }
wait_for 30 "the killed writer to exit" writer_gone
wait "$wpid" 2>/dev/null || true
echo 0 >"$FAULT/slow_enable_ms"
assert_eq "controller alive after its reset's writer was killed" "$(rec dead)" 0
verify after-kill $((SZ / 4))

# --- 6: the same for a function-level reset: the PCI core calls
# reset_prepare and reset_done in the writer's context, and the restart
# after the FLR, which waits for the controller (2 s here), runs in a work
# item. A restart in the writer's context would see the kill and give up.
p0=$(rec pci_resets) rf0=$(rec reset_failures)
echo 2000 >"$FAULT/slow_enable_ms"
(pci_reset 2>/dev/null) &
wpid=$!
flr_started() { (($(rec pci_resets) > p0)); }
wait_for 20 "the FLR to start" flr_started
kill -9 "$wpid" 2>/dev/null || true
wait_for 30 "the killed FLR writer to exit" writer_gone
wait "$wpid" 2>/dev/null || true
echo 0 >"$FAULT/slow_enable_ms"
assert_eq "reset failures after the FLR's writer was killed" "$(($(rec reset_failures) - rf0))" 0
assert_eq "controller alive after its FLR's writer was killed" "$(rec dead)" 0
verify after-flr-kill $((SZ / 4))

# --- REQ_FAILFAST_*: a request whose submitter wants no retries fails
# when a reset takes it back, as on nvme, instead of running again.
# dm-multipath's requests carry REQ_FAILFAST_TRANSPORT: one that fails
# fails its path, which dm-multipath's status then says (a path of one,
# so the writer sees the error). A completion is dropped first, so one
# request at least is still the controller's when the reset takes the
# requests back (QEMU finishes the rest during the disable). Where the
# kernel has no dm-multipath (the debug kernel), this case is only logged.
if modprobe -q dm_multipath 2>/dev/null && modprobe -q dm_round_robin 2>/dev/null &&
	command -v dmsetup >/dev/null; then
	majmin=$(cat "/sys/block/$DISK/dev")
	# Removed whatever happens: it holds the disk, and rmmod.
	mp_remove() {
		[[ -z ${fpid:-} ]] || { kill -9 "$fpid" && wait "$fpid"; } 2>/dev/null || true
		dmsetup remove --force ssdq-mp 2>/dev/null || true
	}
	trap mp_remove EXIT
	echo "0 $(blockdev --getsz "$DEV") multipath 0 0 1 1 round-robin 0 1 1 $majmin 1" |
		dmsetup create ssdq-mp
	# No udev here: the node devtmpfs made, by its kernel name.
	mp=/dev/$(dmsetup info -c --noheadings -o blkdevname ssdq-mp)
	wait_for 10 "$mp" test -b "$mp"
	path_state() { dmsetup status ssdq-mp | awk -v p="$majmin" '{ for (i = 1; i < NF; i++) if ($i == p) print $(i + 1) }'; }
	assert_eq "the multipath's path before the reset" "$(path_state)" A
	q0=$(rec requeued)
	fio --name=failfast --filename="$mp" --direct=1 --ioengine=io_uring \
		--rw=randwrite --bs=4k --offset="$REG_UNBIND_OFF" --size=$((64 * MiB)) \
		--iodepth=16 --time_based --runtime=120 --output=/dev/null >/dev/null 2>&1 &
	fpid=$!
	s0=$(col_sum "$DBG/plugging" submitted)
	mp_busy() { (($(col_sum "$DBG/plugging" submitted) > s0 + 50)); }
	wait_for 20 "I/O through the multipath" mp_busy
	d0=$(injected dropped_completions)
	echo 1 >"$FAULT/drop_completions"
	mp_dropped() { (($(injected dropped_completions) > d0)); }
	wait_for 20 "a completion of the multipath's I/O to be dropped" mp_dropped
	sysfs_reset
	path_failed() { [[ $(path_state) == F ]]; }
	wait_for 10 "dm-multipath to fail the path after the reset" path_failed
	ok "a reset failed dm-multipath's requests (REQ_FAILFAST_TRANSPORT): the path failed"
	wait_for 30 "the writer to exit" fio_gone
	wait "$fpid" || true
	fpid=
	assert_eq "requests requeued by the reset (all were failfast)" "$(($(rec requeued) - q0))" 0
	dmsetup remove ssdq-mp
	trap - EXIT
	assert_eq "controller alive" "$(rec dead)" 0
	allow_dmesg 'multipath|Failing path|I/O error'
else
	log "no dm-multipath in this kernel: REQ_FAILFAST_* requests on a reset not tried"
fi

# --- 9: Doorbell Buffer Config refused after a reset: MMIO doorbells
# from then on, every SQ tail update an MMIO write.
kmsg_mark dbbuf
echo 1 >"$FAULT/refuse_dbbuf"
sysfs_reset
assert_eq "Doorbell Buffer Configs refused" "$(injected refused_dbbufs)" 1
assert_eq "dmesg lines naming the refusal's status" "$(dmesg_since dbbuf |
	grep -c 'refused after reset: NVMe status 0x4002 (Invalid Field in Command, DNR); MMIO doorbells only$' || true)" 1
assert_eq "plugging/shadow_doorbells after the refusal" "$(cat "$SYS/plugging/shadow_doorbells")" 0
allow_dmesg 'plugging/shadow_doorbells: the controller has none'
if echo 1 >"$SYS/plugging/shadow_doorbells" 2>/dev/null; then
	fail "plugging/shadow_doorbells accepted 1 without shadow doorbells"
fi
u0=$(col_sum "$DBG/plugging" sq_db_updates) m0=$(col_sum "$DBG/plugging" sq_db_mmio)
verify mmio-doorbells $((SZ / 4))
u=$(($(col_sum "$DBG/plugging" sq_db_updates) - u0))
m=$(($(col_sum "$DBG/plugging" sq_db_mmio) - m0))
assert_gt "SQ doorbell updates after the refusal" "$u" 0
assert_eq "of which MMIO writes" "$m" "$u"

# Data that must survive the last two cases (written with nothing failing).
keep=$(pattern_file keep.bin "$REG_KEEP_LEN")
dev_write "$keep" "$DEV" "$REG_KEEP_OFF"
rebind() {
	echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/bind
	dut_wait_disk
	DBG=/sys/kernel/debug/ssdq/$DISK FAULT=$DBG/fault SYS=/sys/block/$DISK
}
allow_dmesg 'I/O error|Buffer I/O error|disabling the controller|does not disable|controller not disabled'

# --- 8: unbind while irqpoll rounds defer: the re-arm timer is stopped
# under irq_lock before the vectors and rings go (the debug lane's
# ODEBUG/KASAN would see a timer left behind).
echo irqpoll >"$SYS/irq/mode"
echo 500 >"$SYS/irq/defer_us"
busy_writer unbind-irqpoll "$REG_UNBIND_OFF"
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind
wait_for 30 "fio to exit after the unbind" fio_gone
wait "$fpid" || true
ok "unbind in irqpoll mode with deferral returned, fio exited"
rebind
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "data after the irqpoll unbind"

# --- 4: a controller that will not disable. Its requests are failed (fio
# sees errors and exits), but only after it lost bus mastering: it could
# otherwise still write into pages handed back to their owners.
busy_writer no-disable "$REG_UNBIND_OFF"
rf0=$(rec reset_failures)
echo 1 >"$FAULT/fail_disable"
if sysfs_reset 2>/dev/null; then fail "a reset of a controller that does not disable succeeded"; fi
ok "the reset failed"
assert_eq "disables that did not take" "$(injected failed_disables)" 1
assert_eq "reset failures" "$(($(rec reset_failures) - rf0))" 1
assert_eq "controller dead" "$(rec dead)" 1
assert_given_up
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind
rebind
assert_eq "controller alive after rebind" "$(rec dead)" 0
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "data written before the controller hung"
dut_unload
