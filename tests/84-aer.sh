#!/bin/bash
# aer: PCI error recovery (AER). The kernel's AER driver on the root port
# above the controller reports errors to ssdq's error handlers; aer_inject
# makes the root port report one, as a real link error would.
#   a non-fatal error     ssdq carries on: no reset, nothing lost
#   a fatal error         the link is frozen and reset: ssdq takes every
#                         request back before (no register access), restarts
#                         the controller after (slot_reset); nothing lost,
#                         no request waits for a timeout
#   ... during a reset    the reset stops waiting for the controller and
#                         leaves it to the link reset, which restarts it
#   a controller that     recovery fails: ssdq fails the controller for
#   will not restart      good (bus mastering off first), I/O gets EIO at
#                         once, the module unloads
#   ... on a controller   the link reset's slot_reset still restores config
#   already given up on   space: a rebind brings the controller back
# Both under fio verify with a polled queue and irqpoll with deferral busy,
# so the take-back meets every reaper. Runs in the PCI Express boot only
# (vm.sh --pcie: q35, the controller behind a root port with AER).
# boot: pcie
# timeout: 900
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || {
	skip "ssdq-only (its counters are ssdq's debugfs); nothing to do for $DUT"
}

aer_setup
dut_load poll_queues=1
DBG=/sys/kernel/debug/ssdq/$DISK
FAULT=$DBG/fault
SYS=/sys/block/$DISK
allow_dmesg 'PCI error detected|resetting the controller: PCI error|reset done'

rec() { kv_get "$DBG/recovery" "$1"; }
injected() { kv_get "$FAULT/injected" "$1"; }
port_errs() { # fatal|nonfatal: the root port's count of reported errors
	local k v
	while read -r k v; do
		[[ $k == TOTAL_ERR_* ]] && { echo "$v"; return; }
	done <"/sys/bus/pci/devices/$AER_PORT/aer_dev_$1"
}

recovered() { [[ $(dmesg_raw_since "$1") == *"device recovery successful"* ]]; }
# One error, and the PCI core's report that recovery is over.
inject_and_wait() { # tag uncor-status
	kmsg_mark "$1"
	aer_inject "$2" || return 1
	wait_until $((60 * ${SSDQ_TIMEOUT_SCALE:-1})) recovered "$1"
}

SZ=$((32 * MiB / IO_DIV))
# Verified random writes, QD16, mixed sizes, on an interrupt-driven queue
# and (--hipri) on the polled one.
verify() { # tag size
	run_fio "$1" $((2 * $2)) $((2 * $2)) --filename="$DEV" --direct=1 \
		--ioengine=io_uring --rw=randwrite --bssplit=4k/50:16k/25:128k/25 \
		--size="$2" --iodepth=16 --verify=crc32c \
		--name="$1" --offset="$REG_INTEGRITY_OFF" \
		--hipri=1 --name="$1-hipri" --offset=$((REG_INTEGRITY_OFF + 64 * MiB))
}

dropped() { injected dropped_completions; }
dropped_past() { (($(dropped) > $1)); }
# One error and its recovery, as an event for every(). With "drop", a
# completion is dropped first, so one request at least is still the
# controller's when the link freezes: only the take-back can run it again
# before its timeout. (No drop in 10 s: the verify run is over; disarmed.)
errors=0
aer_error() { # tag uncor-status [drop]
	local d
	errors=$((errors + 1))
	if [[ ${3:-} == drop ]]; then
		d=$(dropped)
		echo 1 >"$FAULT/drop_completions"
		if ! wait_until 10 dropped_past "$d"; then
			echo 0 >"$FAULT/drop_completions"
			return 1
		fi
	fi
	inject_and_wait "err-$errors-$1" "$2"
}

echo irqpoll >"$SYS/irq/mode"
echo 200 >"$SYS/irq/defer_us"

# --- Non-fatal: the link stays up, the controller goes on.
e0=$(rec pci_errors) r0=$(rec resets) t0=$(rec timeouts) p0=$(port_errs nonfatal)
kmsg_mark aer-nonfatal
every 0.5 aer_error nonfatal "$UNSUP_REQ"
verify nonfatal "$SZ"
stop_every
assert_gt "non-fatal errors during I/O" "$EVERY_N" 0
assert_eq "non-fatal errors the root port reported" "$(($(port_errs nonfatal) - p0))" "$EVERY_N"
assert_eq "errors ssdq's error_detected saw" "$(($(rec pci_errors) - e0))" "$EVERY_N"
assert_eq "resets for non-fatal errors" "$(($(rec resets) - r0))" 0
assert_eq "timeouts" "$(($(rec timeouts) - t0))" 0
lines=$(dmesg_raw_since aer-nonfatal | grep -c 'ssdq.*PCI error detected, link still up: carrying on' || true)
assert_eq "'carrying on' lines" "$lines" "$EVERY_N"

# --- Fatal: the link is frozen and reset under ssdq.
e0=$(rec pci_errors) r0=$(rec resets) t0=$(rec timeouts) q0=$(rec requeued)
p0=$(port_errs fatal) d0=$(dropped)
kmsg_mark aer-fatal
every 0.5 aer_error fatal "$MALF_TLP" drop
verify fatal $((2 * SZ))
stop_every
assert_gt "fatal errors during I/O" "$EVERY_N" 0
assert_eq "completions dropped, one before each error" "$(($(dropped) - d0))" "$EVERY_N"
assert_eq "fatal errors the root port reported" "$(($(port_errs fatal) - p0))" "$EVERY_N"
assert_eq "errors ssdq's error_detected saw" "$(($(rec pci_errors) - e0))" "$EVERY_N"
assert_eq "resets, one per fatal error" "$(($(rec resets) - r0))" "$EVERY_N"
assert_eq "timeouts (a request left stuck)" "$(($(rec timeouts) - t0))" 0
q=$(($(rec requeued) - q0))
((q >= EVERY_N)) || fail "requests taken back and run again: $q, want >= $EVERY_N (each dropped one)"
ok "requests taken back and run again: $q (>= $EVERY_N dropped)"
assert_eq "controller alive" "$(rec dead)" 0
log=$(dmesg_raw_since aer-fatal)
assert_eq "'link frozen' lines" "$(grep -c 'ssdq.*resetting the controller: PCI error, link frozen' <<<"$log" || true)" "$EVERY_N"
assert_eq "'reset done' lines" "$(grep -c 'ssdq.*reset done in' <<<"$log" || true)" "$EVERY_N"
assert_eq "'device recovery successful' lines" "$(grep -c 'device recovery successful' <<<"$log" || true)" "$EVERY_N"

# --- The link fails during a reset: the sysfs reset's enable (held for
# 15 s here) sees the link offline and stops waiting, and ssdq leaves the
# controller, its requests taken back, to the error recovery under way,
# whose slot_reset brings it back. Failing it for good there would lose a
# controller the PCI core was about to recover. The hold has to outlast
# aer_inject: on the debug kernel the error landed 1.6 and 2.1 s after the
# reset began (a 2 s hold let that reset finish first, once). And it must
# stay under CAP.TO (8 s): the error recovery's own enable can begin before
# the hold is cleared after the injection (0.1 s after it on the debug
# kernel, once: a 15 s hold then failed that enable, and the controller).
allow_dmesg 'PCI link offline|leaving it to PCI error recovery|resetting the controller: requested through sysfs'
r0=$(rec resets) rf0=$(rec reset_failures) e0=$(rec pci_errors)
echo 6000 >"$FAULT/slow_enable_ms"
kmsg_mark aer-in-reset
(echo 1 >"$SYS/recovery/reset") 2>/dev/null &
rpid=$!
reset_begun() { (($(rec resets) > r0)); }
wait_for 20 "the sysfs reset to start" reset_begun
aer_inject "$MALF_TLP" || fail "aer_inject failed"
echo 0 >"$FAULT/slow_enable_ms"
wait_for 60 "the PCI core's recovery after the error in the reset" recovered aer-in-reset
if wait "$rpid"; then fail "the reset whose link failed succeeded"; fi
assert_eq "reset failures (the one the link failure cut short)" "$(($(rec reset_failures) - rf0))" 1
assert_eq "errors ssdq's error_detected saw" "$(($(rec pci_errors) - e0))" 1
assert_eq "'leaving it to PCI error recovery' lines" \
	"$(dmesg_raw_since aer-in-reset | grep -c 'ssdq.*reset failed with the PCI link offline: leaving it to PCI error recovery' || true)" 1
assert_eq "controller alive after the link reset" "$(rec dead)" 0
verify in-reset "$SZ"

# --- A controller that does not come back after the link reset (a fault
# makes it refuse to disable): ssdq answers the slot reset with DISCONNECT
# and fails its requests, with bus mastering off first; the PCI core gives
# up. A writer is busy throughout: it must see its requests fail, not hang.
allow_dmesg 'does not disable|disabling the controller for good|not disabled \(fault injected\)|I/O error'
busy_writer doomed "$REG_INTEGRITY_OFF"
e0=$(rec pci_errors) rf0=$(rec reset_failures)
echo 1 >"$FAULT/fail_disable"
kmsg_mark aer-failed
aer_inject "$MALF_TLP"
failed() { [[ $(dmesg_raw_since aer-failed) == *"device recovery failed"* ]]; }
wait_for 60 "the PCI core to give up" failed
assert_eq "controller dead" "$(rec dead)" 1
assert_eq "refused disables" "$(injected failed_disables)" 1
assert_eq "reset failures" "$(($(rec reset_failures) - rf0))" 1
# (6.12's PCI core reports the permanent failure by uevent only: no
# second error_detected call.)
assert_eq "errors ssdq's error_detected saw" "$(($(rec pci_errors) - e0))" 1
assert_eq "'disabling for good' lines" \
	"$(dmesg_raw_since aer-failed | grep -c 'ssdq.*disabling the controller for good: controller does not disable after a PCI reset' || true)" 1
assert_given_up
assert_eq "disk size after the failure (sectors)" "$(cat "$SYS/size")" 0
dut_unload

# --- A fatal error on a controller given up on before it came (a reset
# that cannot disable it): the link reset wipes config space all the same.
# ssdq still asks for the slot reset, whose config restore lets a rebind
# find the controller (answering DISCONNECT left the BARs at 0, and the
# rebind read a controller of all zeros: "lacks the NVM command set").
dut_load poll_queues=1
DBG=/sys/kernel/debug/ssdq/$DISK FAULT=/sys/kernel/debug/ssdq/$DISK/fault SYS=/sys/block/$DISK
echo 1 >"$FAULT/fail_disable"
(echo 1 >"$SYS/recovery/reset") 2>/dev/null || true
assert_eq "controller dead after a reset that could not disable it" "$(rec dead)" 1
kmsg_mark aer-dead
aer_inject "$MALF_TLP" || fail "aer_inject failed"
failed_again() { [[ $(dmesg_raw_since aer-dead) == *"device recovery failed"* ]]; }
wait_for 60 "the PCI core to give up on the dead controller" failed_again
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/bind 2>/dev/null ||
	fail "rebinding after a fatal error on a dead controller failed: $(dmesg_raw_since aer-dead | grep 'ssdq 0000' | tail -n1)"
dut_wait_disk 60
verify after-dead $((8 * MiB / IO_DIV))
ok "a rebind after a fatal error on a dead controller works, data verified"
dut_unload
