#!/bin/bash
# recovery: under fio verify load, inject lost completions, lost interrupts,
# delayed completions and bad command ids, and reset through sysfs; then
# remove the device while its I/O is stuck. Each case: zero verify errors,
# fio exits, the fault counters equal what was injected, recovery takes
# about io_timeout, and dmesg shows no WARNING/BUG.
# timeout: 900
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || {
	skip "ssdq-only (fault injection is ssdq's debugfs); nothing to do for $DUT"
}

IO_TIMEOUT=1 # seconds, the issue's 1-2 s
dut_load io_timeout=$IO_TIMEOUT
assert_eq "queue/io_timeout (ms)" "$(sysq io_timeout)" $((IO_TIMEOUT * 1000))
DBG=/sys/kernel/debug/ssdq/$DISK
FAULT=$DBG/fault

# What recovery logs is expected here; anything else still fails the test.
allow_dmesg 'resetting the controller|timed out|completed without an interrupt|not in flight, ignored|reset done'

rec() { kv_get "$DBG/recovery" "$1"; }

# The timeout steps and resets, as ssdq's trace events tell them (when the
# kernel has tracefs): a second witness beside the counters.
EVENTS=0
if have_trace_events; then
	EVENTS=1
else
	log "no tracefs in this kernel: recovery checked by its counters only"
fi
events_start() { if ((EVENTS)); then trace_start ssdq_timeout_step ssdq_reset; fi; }
events_stop() { if ((EVENTS)); then trace_stop "$T_DIR/events-$1.txt"; fi; }
# How many recorded events match PATTERN (0 without tracefs: callers check
# EVENTS first).
events_count() { # tag pattern
	grep -c -- "$2" "$T_DIR/events-$1.txt" || true
}
injected() { kv_get "$FAULT/injected" "$1"; }

# fio verify job on its own region: random writes of mixed sizes, then a
# verified read of everything.
verify_load() { # tag iodepth size
	run_fio "$1" "$3" "$3" --name="$1" --filename="$DEV" --direct=1 \
		--ioengine=io_uring --rw=randwrite --bssplit=4k/50:16k/25:128k/25 \
		--offset="$REG_INTEGRITY_OFF" --size="$3" --iodepth="$2" \
		--verify=crc32c --verify_state_save=0
}

# Recovery should take about io_timeout: blk-mq's timer fires at the next
# whole second after the deadline, so allow up to two periods plus slack.
assert_recovery_time() { # what
	local ms
	ms=$(rec last_recovery_ms)
	((ms >= IO_TIMEOUT * 1000 - 50 && ms <= IO_TIMEOUT * 1000 * 2 + 1500)) ||
		fail "$1: recovery took $ms ms, io_timeout is ${IO_TIMEOUT}s"
	ok "$1: recovered $ms ms after issue (io_timeout ${IO_TIMEOUT}s)"
}

# --- lost completions: reaped but never handed up -> timeout -> Abort
# (QEMU 7.2 never aborts) -> reset -> the requests run again.
r0=$(rec resets) a0=$(rec aborts)
echo 3 >"$FAULT/drop_completions"
events_start
verify_load lost-completions 16 $((16 * MiB))
events_stop lost-completions
assert_eq "dropped completions" "$(injected dropped_completions)" 3
assert_eq "drop_completions left armed" "$(cat "$FAULT/drop_completions")" 0
assert_gt "resets after lost completions" "$(($(rec resets) - r0))" 0
assert_gt "aborts sent" "$(($(rec aborts) - a0))" 0
assert_gt "requests run again" "$(rec requeued)" 0
assert_recovery_time "lost completions"
if ((EVENTS)); then
	f=$T_DIR/events-lost-completions.txt
	assert_eq "abort step events = aborts sent" \
		"$(events_count lost-completions 'step=abort')" "$(($(rec aborts) - a0))"
	assert_eq "reset step events + ssdq_reset events = 2 x resets" \
		"$(($(events_count lost-completions 'step=reset') + $(events_count lost-completions 'why="command timeout" ret=0')))" \
		"$((2 * ($(rec resets) - r0)))"
	# In order: the first timed-out request was aborted, then reset.
	order=$(grep -oE 'step=[a-z_]+|ssdq_reset:' "$f" | head -n3 | tr '\n' ' ')
	[[ $order == "step=abort step=reset ssdq_reset: " ]] ||
		fail "lost completions: timeout steps in the wrong order: $order"
	ok "lost completions: events in order: $order"
fi

# --- lost interrupts: at QD1 each dropped interrupt strands its CQE until
# the timeout's CQ poll finds it; no reset is needed.
r0=$(rec resets) l0=$(rec lost_interrupts)
echo 3 >"$FAULT/drop_irqs"
events_start
verify_load lost-irqs 1 $((2 * MiB))
events_stop lost-irqs
assert_eq "dropped interrupts" "$(injected dropped_irqs)" 3
assert_eq "lost interrupts found by the timeout" "$(($(rec lost_interrupts) - l0))" 3
assert_eq "resets for lost interrupts" "$(($(rec resets) - r0))" 0
assert_recovery_time "lost interrupts"
if ((EVENTS)); then
	assert_eq "lost_interrupt step events" "$(events_count lost-irqs 'step=lost_interrupt')" 3
	assert_eq "other timeout steps or resets" \
		"$(events_count lost-irqs 'step=abort\|step=reset\|ssdq_reset:')" 0
fi

# --- delayed completions, shorter than io_timeout: slower, nothing else.
t0=$(rec timeouts)
echo 300 >"$FAULT/delay_ms"
echo 20 >"$FAULT/delay_completions"
verify_load delayed-short 8 $((8 * MiB))
assert_eq "delayed completions" "$(injected delayed_completions)" 20
assert_eq "timeouts with 300 ms delays" "$(($(rec timeouts) - t0))" 0

# --- delayed beyond io_timeout: the reset hands the held completions up.
# The delay outlasts the slowest recovery allowed (2 * io_timeout + 1.5 s):
# a held completion must never beat the timeout to it.
r0=$(rec resets)
echo 6000 >"$FAULT/delay_ms"
echo 2 >"$FAULT/delay_completions"
verify_load delayed-long 8 $((8 * MiB))
assert_eq "delayed completions" "$(injected delayed_completions)" 22
assert_gt "resets for 6 s delays" "$(($(rec resets) - r0))" 0
assert_recovery_time "delayed completions"
echo 0 >"$FAULT/delay_ms"

# --- bad command ids: reported and ignored, never followed; the real
# commands time out and are run again.
b0=$(rec bad_cqes) r0=$(rec resets)
echo 4 >"$FAULT/bad_cids"
verify_load bad-cids 16 $((16 * MiB))
assert_eq "bad command ids injected" "$(injected bad_cids)" 4
assert_eq "bad CQEs detected" "$(($(rec bad_cqes) - b0))" 4
assert_gt "resets after bad ids" "$(($(rec resets) - r0))" 0

# --- sysfs reset under load, three times (the recording started first:
# the resets come on their own clock).
r0=$(rec resets)
rm -f "$T_DIR/stop"
events_start
(
	for _ in 1 2 3; do
		nap 1
		echo 1 >"/sys/block/$DISK/recovery/reset"
	done
	touch "$T_DIR/resets-done"
) &
rpid=$!
verify_load sysfs-reset 16 $((48 * MiB))
wait "$rpid" || fail "a sysfs reset write failed"
events_stop sysfs-reset
assert_eq "sysfs resets" "$(($(rec resets) - r0))" 3
if ((EVENTS)); then
	assert_eq "ssdq_reset events, through sysfs, done" \
		"$(events_count sysfs-reset 'why="requested through sysfs" ret=0')" 3
fi
assert_eq "controller alive" "$(rec dead)" 0

# --- bad input is refused with one line naming what is allowed.
kmsg_mark bad
allow_dmesg 'fault/drop_irqs takes 0-1000000|recovery/reset takes 1'
if echo -5 >"$FAULT/drop_irqs" 2>/dev/null; then fail "fault/drop_irqs accepted -5"; fi
if echo 0 >"/sys/block/$DISK/recovery/reset" 2>/dev/null; then fail "recovery/reset accepted 0"; fi
assert_eq "dmesg lines for 2 bad writes" \
	"$(dmesg_since bad | grep -Ec 'takes 0-1000000|takes 1$')" 2

# --- removal while I/O is stuck: unbind with completions dropped. The
# recovery still runs, removal finishes, nothing hangs or crashes, and data
# written before is intact after rebind.
keep=$(pattern_file keep.bin "$REG_KEEP_LEN")
dev_write "$keep" "$DEV" "$REG_KEEP_OFF"
busy_writer stuck "$REG_UNBIND_OFF" 60
echo 2 >"$FAULT/drop_completions"
kmsg_mark unbind
allow_dmesg 'disabling the controller|I/O error|Buffer I/O error'
t=$SECONDS
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind
ok "unbind returned after $((SECONDS - t)) s"
if ! (wait_for 30 "fio to exit after the unbind" fio_gone); then
	ps -eo pid,stat,wchan:32,cmd >"$T_DIR/ps.txt"
	cat /proc/"$fpid"/task/*/stack >"$T_DIR/fio-stacks.txt" 2>&1
	fail "fio still running 30 s after the unbind (see ps.txt, fio-stacks.txt)"
fi
wait "$fpid" || true
ok "fio exited"
dmesg_since unbind | grep -q 'resetting the controller' ||
	log "note: the unbind finished before a timeout fired"
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/bind
dut_wait_disk
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "data written before the removal"
dut_unload
